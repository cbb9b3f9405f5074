// 6. workflows: a closed loop of HTTP requests into a 3-step workflow; runs completed per second (each step committed
// before the next), beside the same load into a one-step source (its events stored) and a bare Fastify route.
import { loadgen } from './lib/client.mjs';
import { serverCpuDuring, watched } from './lib/machine.mjs';
import { waitForCount } from './lib/events.mjs';
import { startBareFastify } from './lib/servers.mjs';
import { cpuPerEvent, int, p50p99, sleep, summarize } from './lib/stats.mjs';
import { met, row } from './lib/table.mjs';
import { startTributary } from './lib/tributary.mjs';

export const name = 'workflows';
export const summary = 'HTTP requests into a 3-step workflow: runs completed per second, beside a one-step source and bare Fastify';

const STEPS = [
  { name: 'parse', component_code: 'export default defineComponent({ async run({ steps }) { return steps.trigger.event.body } })' },
  {
    name: 'enrich',
    component_code: 'export default defineComponent({ async run({ steps, $ }) { $.export("seq", steps.parse.$return_value.seq); return { ok: true } } })',
  },
  { name: 'emit', component_code: 'export default defineComponent({ async run({ steps, $ }) { $.send.emit({ raw_event: { seq: steps.enrich.seq } }) } })' },
];
const ECHO = 'module.exports = { name: "bench-ingest", version: "1", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body) } }';

/** Polls the count of succeeded runs until it reaches `expected` or stops moving for `quietMs`. */
async function waitForRuns(api, workflowId, expected, { timeoutMs, quietMs = 10_000 }) {
  const start = Date.now();
  let last = -1;
  let lastChange = start;
  for (;;) {
    const res = await api.get(`/v1/workflows/${workflowId}/runs?status=succeeded&limit=1`);
    if (res.status !== 200) throw new Error(`runs answered ${res.status}: ${JSON.stringify(res.body)}`);
    const count = res.body.page_info.total_count;
    if (count !== last) {
      last = count;
      lastChange = Date.now();
    }
    if (count >= expected) return { count, reached: true };
    if (Date.now() - lastChange > quietMs || Date.now() - start > timeoutMs) return { count, reached: false };
    await sleep(100);
  }
}

/**
 * Runs the workflow `runs` times one after another (manual runs) and measures each durable step transition: from
 * the end of a step (its start plus its duration, as the run records them) to the start of the next one, which
 * includes committing the step.
 */
async function stepTransitions(api, workflowId, runs) {
  const gaps = [];
  for (let i = 0; i < runs; i++) {
    const started = await api.ok('POST', `/v1/workflows/${workflowId}/run`, { body: { seq: i } });
    let run;
    for (;;) {
      run = (await api.ok('GET', `/v1/workflows/${workflowId}/runs/${started.data.id}`)).data;
      if (run.status === 'succeeded' || run.status === 'failed') break;
      await sleep(1);
    }
    for (let s = 1; s < run.steps.length; s++) {
      const previous = run.steps[s - 1];
      gaps.push(run.steps[s].started_at_ms - (previous.started_at_ms + previous.duration_ms));
    }
  }
  return { ...summarize(gaps.sort((a, b) => a - b)), count: gaps.length };
}

/** Load for `seconds`, then the wait until everything acknowledged is done; done/s counts from the first request. */
async function measure(server, url, job, timeout, drain) {
  const started = Date.now();
  const [[load, busy], cpuMs] = await serverCpuDuring(server.pid, async () => {
    const measured = await watched(() => loadgen({ ...job, url }, timeout));
    measured.push(await drain(measured[0].acked));
    return measured;
  });
  const seconds = (Date.now() - started) / 1000;
  return { load, busy, cpuMs, seconds };
}

export async function run(cfg, log) {
  const job = { mode: 'closed', connections: cfg.connections, warmupMs: 0, durationMs: cfg.duration * 1000 };
  const timeout = cfg.duration * 1000 + 120_000;
  const drainMs = cfg.drainTimeout * 1000;

  const workflowServer = await startTributary(['--event-retention', '10000000']);
  let flow;
  try {
    const created = await workflowServer.api.ok('POST', '/v1/workflows', { name: 'bench', trigger: { type: 'http', custom_response: false }, steps: STEPS });
    const workflowId = created.data.id;
    log(`workflow: ${cfg.connections} connections for ${cfg.duration} s into a 3-step workflow`);
    let done;
    flow = await measure(workflowServer, `${created.data.trigger.endpoint_url}/bench`, job, timeout, async (acked) => {
      done = await waitForRuns(workflowServer.api, workflowId, acked, { timeoutMs: drainMs });
      return done;
    });
    flow.done = done;
    log(`workflow: ${int(flow.load.acked)} runs acknowledged, ${int(done.count)} succeeded in ${flow.seconds.toFixed(1)} s`);
    flow.transitions = await stepTransitions(workflowServer.api, workflowId, cfg.overheadRuns);
    log(`workflow: ${flow.transitions.count} step transitions of ${cfg.overheadRuns} runs made one at a time`);
  } finally {
    await workflowServer.stop();
  }

  const sourceServer = await startTributary(['--event-retention', '10000000']);
  let source;
  try {
    const deployed = await sourceServer.api.ok('POST', '/v1/sources', { component_code: ECHO, name: 'ingest' });
    log('source: the same load into a one-step source');
    source = await measure(sourceServer, `${deployed.data.configured_props.http.endpoint_url}/bench`, job, timeout, (acked) =>
      waitForCount(sourceServer.api, deployed.data.id, acked, { timeoutMs: drainMs }),
    );
    log(`source: ${int(source.load.acked)} acknowledged, stored in ${source.seconds.toFixed(1)} s`);
  } finally {
    await sourceServer.stop();
  }

  const bare = await startBareFastify();
  let base;
  try {
    [[base]] = await serverCpuDuring(bare.pid, () => watched(() => loadgen({ ...job, url: `${bare.url}/e/bench` }, timeout)));
  } finally {
    await bare.stop();
  }

  const runsPerSecond = flow.done.count / flow.seconds;
  const eventsPerSecond = source.load.acked / source.seconds;
  return [
    row(
      'workflows',
      `3-step runs completed/s (${cfg.connections} conn., HTTP trigger), from the first request to the last run committed`,
      `${int(runsPerSecond)}/s (${int(flow.done.count)} of ${int(flow.load.acked)} acknowledged runs succeeded)${flow.busy}`,
      `one-step source: ${int(eventsPerSecond)} events/s stored; bare Fastify ${int(base.rate)} requests/s`,
      '≥ 2,000 runs/s',
      met(runsPerSecond >= 2000 && flow.done.reached),
    ),
    row(
      'workflows',
      `durable step transition p50 / p99 (${int(flow.transitions.count)} transitions, runs one at a time)`,
      p50p99(flow.transitions),
      '',
      'p50 ≤ 1 ms',
      met(flow.transitions.p50 <= 1),
    ),
    row('workflows', 'HTTP acknowledgement p50 / p99', p50p99(flow.load.latency), p50p99(source.load.latency), ''),
    row(
      'workflows',
      'server CPU per run (server + workers)',
      cpuPerEvent(flow.cpuMs, flow.done.count),
      `${cpuPerEvent(source.cpuMs, source.load.acked)} per source event`,
      '',
    ),
  ];
}
