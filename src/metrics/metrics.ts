// Tributary's Prometheus metrics: one registry, the counters and histograms the parts of the server add to, and
// gauges read when scraped. Labels are small fixed sets (a route template, a status, an outcome): never ids or data.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export type InvocationOutcomeLabel = 'ok' | 'error' | 'timeout' | 'skipped';
export type DeliveryOutcomeLabel = 'delivered' | 'retrying' | 'failed' | 'gone';

/** What gauges read at scrape time, from the parts that know. */
export interface GaugeSources {
  /** Invocations waiting in the queue (a query: only at scrape). */
  queueDepth(): Promise<number>;
  sseClients(): number;
  workers(): { starting: number; busy: number; idle: number };
  /** Whether every change reaches this node's loops as a signal (always on one node; in a cluster, while LISTEN is up). */
  signalled(): boolean;
  /** Nodes that run work (worker or all) alive, as this node last saw them: 1 on one node (see NodePresence). */
  workerNodes(): number;
}

export class Metrics {
  readonly registry = new Registry();
  private readonly httpRequests = new Counter({
    name: 'tributary_http_requests_total',
    help: 'HTTP requests answered, by route template and status code',
    labelNames: ['route', 'status'] as const,
    registers: [this.registry],
  });
  private readonly invocations = new Counter({
    name: 'tributary_invocations_total',
    help: 'Source invocations run, by outcome (ok, error, timeout, skipped)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  private readonly invocationDuration = new Histogram({
    name: 'tributary_invocation_duration_seconds',
    help: "Time a source's run took in its worker",
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 60],
    registers: [this.registry],
  });
  private readonly eventsEmitted = new Counter({
    name: 'tributary_events_emitted_total',
    help: 'Events committed (emitted events, $logs and $errors lines included)',
    registers: [this.registry],
  });
  private readonly webhookDeliveries = new Counter({
    name: 'tributary_webhook_deliveries_total',
    help: 'Webhook delivery attempts, by outcome (delivered, retrying, failed, gone)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  private readonly timerLag = new Histogram({
    name: 'tributary_timers_due_lag_seconds',
    help: 'How late a due timer fired',
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 2, 5, 15, 60],
    registers: [this.registry],
  });
  private readonly queueLooks = new Counter({
    name: 'tributary_queue_looks_total',
    help: 'Looks at a work queue that no signal asked for (the lease watch, or polling while signals are down), by queue',
    labelNames: ['queue'] as const,
    registers: [this.registry],
  });
  private sources: GaugeSources | undefined;

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'tributary_process_' });
    const gauges = this;
    new Gauge({
      name: 'tributary_queue_depth',
      help: 'Invocations waiting in the queue (NaN while the database cannot be read)',
      registers: [this.registry],
      async collect() {
        if (!gauges.sources) return;
        // A database outage must not fail the whole scrape: the other figures are the ones that show it.
        this.set(await gauges.sources.queueDepth().catch(() => Number.NaN));
      },
    });
    new Gauge({
      name: 'tributary_sse_clients',
      help: 'Live SSE streams open on this node',
      registers: [this.registry],
      collect() {
        if (gauges.sources) this.set(gauges.sources.sseClients());
      },
    });
    new Gauge({
      name: 'tributary_workers',
      help: 'Worker processes of this node, by state',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        if (!gauges.sources) return;
        for (const [state, count] of Object.entries(gauges.sources.workers())) this.set({ state }, count);
      },
    });
    new Gauge({
      name: 'tributary_signals_connected',
      help: "1 while every change reaches this node's work loops as a signal (always on one node), 0 while they poll every second",
      registers: [this.registry],
      collect() {
        if (gauges.sources) this.set(gauges.sources.signalled() ? 1 : 0);
      },
    });
    new Gauge({
      name: 'tributary_worker_nodes',
      help: 'Nodes that run work (--role worker or all) alive, as this node last saw them in the nodes table (1 on one node)',
      registers: [this.registry],
      collect() {
        if (gauges.sources) this.set(gauges.sources.workerNodes());
      },
    });
  }

  /** The parts gauges read, once they exist (app.ts wires them after building them). */
  readGaugesFrom(sources: GaugeSources): void {
    this.sources = sources;
  }

  requestAnswered(route: string, status: number): void {
    this.httpRequests.inc({ route, status: String(status) });
  }

  invocationRan(outcome: InvocationOutcomeLabel, durationMs: number | undefined): void {
    this.invocations.inc({ outcome });
    if (durationMs !== undefined) this.invocationDuration.observe(durationMs / 1000);
  }

  eventsCommitted(count: number): void {
    if (count > 0) this.eventsEmitted.inc(count);
  }

  deliveryAttempted(outcome: DeliveryOutcomeLabel): void {
    this.webhookDeliveries.inc({ outcome });
  }

  queueLooked(queue: string): void {
    this.queueLooks.inc({ queue });
  }

  timerFired(lateMs: number): void {
    this.timerLag.observe(Math.max(0, lateMs) / 1000);
  }
}
