// Composition root: opens the store, starts the runtime and services, publishes the registry and serves HTTP.
import { AccountLimiter } from './services/account-limits.js';
import path from 'node:path';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createLogger } from './startup/logger.js';
import { withListeningPort, type Config } from './config.js';
import type { Store } from './store/database.js';
import { openServerStore } from './startup/open-server-store.js';
import { resolveWorkerUser } from './runtime/worker-user.js';
import { ComponentRuntime } from './runtime/index.js';
import { UserService, type NewAccount } from './services/users.js';
import { ComponentService } from './services/components.js';
import { SourceService } from './services/sources.js';
import { EventService } from './services/events.js';
import { SecretBox } from './lib/secrets.js';
import { warnIfSecretKeyDiffers } from './startup/secret-key-check.js';
import { systemClock } from './lib/clock.js';
import { QuotaService } from './services/quotas.js';
import { EndpointDirectory, IngressService } from './services/ingress.js';
import { RunService } from './services/runs.js';
import { LiveStreams } from './services/live.js';
import { HealthService } from './services/health.js';
import { NodePresence } from './services/node-presence.js';
import { InvocationBases } from './engine/invocation-base.js';
import { SourceLocks } from './engine/source-locks.js';
import { Dispatcher } from './engine/dispatcher.js';
import { TransactionGroup } from './store/group-commit.js';
import { TimerScheduler } from './engine/timers.js';
import { SubscriptionService } from './services/subscriptions.js';
import { WebhookService } from './services/webhooks.js';
import { WorkflowService } from './services/workflows.js';
import { PropConfigurationService } from './services/prop-configuration.js';
import { DataStoreService } from './services/data-stores.js';
import { AccountCredentials } from './services/account-credentials.js';
import { ConnectedAccountService } from './services/connected-accounts.js';
import { WorkflowRunService } from './services/workflow-runs.js';
import { WorkflowRunner } from './engine/workflow-runner.js';
import type { EventBus } from './delivery/bus.js';
import { PollCadence } from './lib/poll-cadence.js';
import { DatabaseOutageLog } from './store/outage-log.js';
import type { DeliveryQueue } from './delivery/webhooks/hand-over.js';
import { DeliveryRouter } from './commit/router.js';
import { SseHub } from './delivery/sse-hub.js';
import { WebhookSender } from './delivery/webhooks/sender.js';
import { OutboxSender } from './delivery/sends/sender.js';
import { settlesWithin } from './lib/settles-within.js';
import { listenToCluster } from './startup/listen-to-cluster.js';
import { linksBetweenNodes } from './startup/node-links.js';
import { sendPerformers } from './startup/send-performers.js';
import { publishRegistry, reservePort } from './startup/start-helpers.js';
import { drainConnections } from './api/drain.js';
import { buildApi, type ApiServices } from './api/server.js';
import { countQueued } from './store/invocations.js';
import type { StartOptions } from './startup/start-options.js';

/** Everything started, for the HTTP layer (its ApiServices part), the CLI and tests that look inside. */
export interface Services extends ApiServices {
  readonly config: Config;
  readonly store: Store;
  readonly runtime: ComponentRuntime;
  readonly dispatcher: Dispatcher;
  readonly quotas: QuotaService;
  readonly webhookSender: WebhookSender;
  readonly bus: EventBus;
  readonly sse: SseHub;
}

export interface RunningTributary {
  /** The base URL the server listens on (the public URL when one is configured). */
  readonly url: string;
  readonly config: Config;
  readonly services: Services;
  /** `http://host:port/metrics` when `--metrics-port` is set. */
  readonly metricsUrl: string | undefined;
  /** The account created on the first start with an empty database, with its key. */
  readonly initialAccount: NewAccount | undefined;
  /** Stops accepting requests, lets in-flight requests finish, stops workers and closes the database. */
  close(): Promise<void>;
}

/** The folder that holds package.json; registry/ and dist/ are found from it. */
export const PACKAGE_ROOT = (() => {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, 'package.json'))) dir = path.dirname(dir);
  return dir;
})();

export { createLogger };

export type { StartOptions };

export async function startTributary(givenConfig: Config, options: StartOptions = {}): Promise<RunningTributary> {
  // Endpoint URLs are built from the public URL, so with `--port 0` the port is chosen (and held) before anything starts.
  const reserved = givenConfig.port === 0 ? await reservePort(givenConfig.host) : undefined;
  const config = reserved ? withListeningPort(givenConfig, reserved.port, options.publicUrlGiven ?? false) : givenConfig;
  const logger = options.logger ?? createLogger(config);
  const clock = options.clock ?? systemClock;
  // A database outage met by background work (work loops, the checkpoints, the cluster's connections) is logged once.
  const outages = new DatabaseOutageLog(logger);
  const { store, lock } = await openServerStore(config, { logger, outages, queryTimeoutMs: options.queryTimeoutMs });
  outages.countWritesWith(() => store.reached());
  const runtime = new ComponentRuntime({
    dataDir: config.dataDir,
    workerMemoryMb: config.workerMemory,
    poolSize: config.workerPoolSize,
    workerNice: config.workerNice,
    loadTimeoutMs: config.loadTimeout * 1000,
    egress: { allowPrivateNetwork: config.allowPrivateNetwork, allow: [...config.egressAllow] },
    workerUser: resolveWorkerUser(config.workerUser),
    extraCaFile: config.workerCaFile,
    logger: logger.child({ module: 'runtime' }),
  });
  try {
    const users = new UserService(store, config, clock);
    const components = new ComponentService(store, runtime, { allowPrivateNetwork: config.allowPrivateNetwork, logger });
    const locks = new SourceLocks();
    const secrets = SecretBox.open(config.secretKey, config.dataDir, config.secretKeyFile);
    await warnIfSecretKeyDiffers(store, secrets, logger);
    // prom-client and its collectors (an event-loop timer, a GC observer) are loaded only when metrics are served.
    const metrics = config.metricsPort === undefined ? undefined : new (await import('./metrics/metrics.js')).Metrics();
    const cadence = new PollCadence(1000, store.dialect === 'sqlite', (queue) => metrics?.queueLooked(queue));
    const { bus, signals } = linksBetweenNodes(store, config, logger, cadence, outages, options.listenCheckMs);
    const runsWork = config.role !== 'api';
    const servesHttp = config.role !== 'worker';
    // One group commit for queue inserts, batch commits and delivery records: under load they share COMMITs.
    const transactions = new TransactionGroup(store);
    const webhookSender = new WebhookSender(
      store,
      secrets,
      {
        allowPrivateNetwork: config.allowPrivateNetwork,
        retryScheduleSeconds: config.webhookRetrySchedule,
        timeoutMs: config.webhookTimeout * 1000,
        leaseMs: config.webhookTimeout * 1000 + 45_000,
        cadence,
        outages,
        concurrency: 32,
        reclaimAtStart: store.dialect === 'sqlite',
        metrics,
        announce: (kind, ids) => signals.signal(kind, ids),
      },
      transactions,
      logger.child({ module: 'webhooks' }),
      clock,
    );
    // Listener runs queued inside a commit wake the dispatcher once it commits; it is built further down.
    const runsQueued = (sourceIds?: string[]) => dispatcher.wake(sourceIds);
    const workflowRunsQueued = (runIds: string[]) => workflowRunner.wake(runIds);
    // Deliveries committed on an `api` node (a deploy hook's events) are left unleased, for the senders of other nodes.
    const deliveryQueue: DeliveryQueue = runsWork
      ? webhookSender
      : { leaseForNew: () => undefined, handOver: () => {}, wake: () => signals.signal('deliveries') };
    const quotas = new QuotaService(store, config, clock);
    const router = new DeliveryRouter({
      dialect: store.dialect,
      retention: config.eventRetention,
      bus,
      deliveries: deliveryQueue,
      runsQueued,
      workflowRunsQueued,
      clock,
      metrics,
      maxQueuedListenerRuns: options.maxQueuedListenerRuns,
      quotas,
    });
    const credentials = new AccountCredentials(
      store,
      secrets,
      clock,
      { allowPrivateNetwork: config.allowPrivateNetwork },
      logger.child({ module: 'accounts' }),
    );
    const bases = new InvocationBases(runtime, secrets, credentials, { publicUrl: config.publicUrl, runTimeoutSeconds: config.runTimeout });
    const limiter = new AccountLimiter(store, config.accountLimits);
    const sources = new SourceService(store, components, runtime, secrets, locks, bases, router, {
      minTimerInterval: config.minTimerInterval,
      eventRetention: config.eventRetention,
      clock,
      limiter,
    });
    const subscriptions = new SubscriptionService(store, limiter);
    sources.onCreateInTransaction((trx, row) => subscriptions.materialise(trx, row));
    const webhooks = new WebhookService(
      store,
      secrets,
      { allowPrivateNetwork: config.allowPrivateNetwork, publicUrl: config.publicUrl, onDeleted: webhookSender.retired },
      limiter,
    );
    const events = new EventService(store, config.eventRetention);
    const dispatcher = new Dispatcher(
      store,
      runtime,
      bases,
      locks,
      {
        concurrency: config.workerPoolSize * 4,
        batchSize: 200,
        batchWindowMs: config.batchWindow,
        leaseMs: 15_000,
        cadence,
        outages,
        soleConsumer: store.dialect === 'sqlite',
        retention: config.eventRetention,
        router,
        clock,
        queuedForOthers: (sourceIds) => signals.signal('invocations', sourceIds),
        relayAnswer: (id, answer) => signals.relayAnswer(id, answer),
        metrics,
      },
      transactions,
      logger.child({ module: 'dispatcher' }),
    );
    sources.onChange((change) => dispatcher.evict(change.sourceId));
    // A rotated credential or a refreshed token: the sources naming the account build their `$auth` again.
    credentials.onStaleSource((sourceId) => dispatcher.evict(sourceId));
    const sse = new SseHub(bus, {}, { logger: logger.child({ module: 'sse' }), outages });
    sources.onChange((change) => change.kind === 'delete' && sse.closeEmitter(change.sourceId));
    // Workflow steps' `$.send.http/email/s3`, carried out after their step commits, retried like webhook deliveries.
    const outbox = new OutboxSender(
      store,
      sendPerformers(config, clock),
      {
        retryScheduleSeconds: config.webhookRetrySchedule,
        leaseMs: config.webhookTimeout * 1000 + 45_000,
        cadence,
        outages,
        concurrency: 16,
        reclaimAtStart: store.dialect === 'sqlite',
        onReleased: () => signals.signal('sends'),
      },
      logger.child({ module: 'sends' }),
      clock,
      secrets,
    );
    const workflowRunner = new WorkflowRunner(
      store,
      runtime,
      secrets,
      transactions,
      {
        concurrency: config.workerPoolSize * 4,
        batchSize: 100,
        leaseMs: 15_000,
        cadence,
        outages,
        soleConsumer: store.dialect === 'sqlite',
        dialect: store.dialect,
        retention: config.eventRetention,
        router,
        clock,
        outbox,
        credentials,
        queuedForOthers: (runIds) => signals.signal('workflow_runs', runIds),
        relayAnswer: (id, answer) => signals.relayAnswer(id, answer),
      },
      logger.child({ module: 'workflows' }),
    );
    const workflows = new WorkflowService(store, components, secrets, {
      publicUrl: config.publicUrl,
      minTimerInterval: config.minTimerInterval,
      clock,
      limiter,
    });
    workflows.onCreateInTransaction((trx, row) => subscriptions.materialise(trx, row));
    const workflowRuns = new WorkflowRunService(store, workflows, quotas, workflowRunner);
    const connectedAccounts = new ConnectedAccountService(store, credentials, sources, workflows, limiter);
    const ingress = new IngressService(new EndpointDirectory(store, options.endpointCacheTtlMs), quotas, dispatcher, workflowRuns, {
      runTimeoutSeconds: config.runTimeout,
    });
    workflows.onChange((change) => {
      ingress.evictSource(change.workflowId);
      workflowRunner.evictWorkflow(change.workflowId);
      timers.poke();
    });
    sources.onChange((change) => ingress.evictSource(change.sourceId));
    const runs = new RunService(sources, quotas, dispatcher);
    const live = new LiveStreams(store, { logger: logger.child({ module: 'sse' }), outages }, sources, workflows, events, sse, options.maxStreamsPerAccount);
    workflows.onChange((change) => change.kind === 'delete' && sse.closeEmitter(change.workflowId));
    const presence = store.dialect === 'postgres' ? new NodePresence(store, config, dispatcher.owner, { logger, outages, clock }) : undefined;
    const health = new HealthService(store, runtime, presence);
    const propConfiguration = new PropConfigurationService(store, components, runtime, clock, { minTimerIntervalSeconds: config.minTimerInterval });
    // options() and additionalProps() see `$auth` as runs do, from the owner's connected accounts.
    propConfiguration.useAuths((accountId, props, configured) => connectedAccounts.authsFor(accountId, props, configured));
    for (const deploys of [sources, workflows]) deploys.useAdditionalProps(propConfiguration);
    const dataStores = new DataStoreService(store, clock);
    const timers = new TimerScheduler(
      store,
      runsQueued,
      workflowRunsQueued,
      quotas,
      config.eventRetention,
      router,
      logger.child({ module: 'timers' }),
      clock,
      cadence,
      outages,
      metrics,
    );
    sources.onChange(() => timers.poke());
    listenToCluster(signals, { dispatcher, workflowRunner, timers, webhookSender, outbox, ingress, live, workflowRuns });
    sources.onChange((change) => signals.signal('sources', [change.sourceId]));
    credentials.onStaleSource((sourceId) => signals.signal('sources', [sourceId]));
    workflows.onChange((change) => signals.signal('workflows', [change.workflowId]));
    users.onKeyRotated((accountId) => {
      void live.endStreamsOfOldKeys([accountId]);
      signals.signal('accounts', [accountId]);
    });
    const services: Services = {
      config,
      store,
      runtime,
      dispatcher,
      quotas,
      webhookSender,
      bus,
      sse,
      users,
      components,
      propConfiguration,
      dataStores,
      sources,
      runs,
      events,
      live,
      ingress,
      subscriptions,
      webhooks,
      workflows,
      workflowRuns,
      connectedAccounts,
      health,
    };

    await publishRegistry(components, logger, PACKAGE_ROOT);

    // Only a node with live streams hears other nodes' events: a worker would read every one back for no one.
    if (servesHttp) await bus.start();
    await signals.start();
    const app = servesHttp ? await buildApi(services, logger, { metrics, requestTimeoutMs: options.requestTimeoutMs }) : undefined;
    await reserved?.release();
    await app?.listen({ host: config.host, port: config.port });
    const gauges = { queueDepth: () => countQueued(store.db), sseClients: () => sse.clientCount(), workers: () => runtime.workerStates() };
    metrics?.readGaugesFrom({ ...gauges, signalled: () => cadence.isSignalled, workerNodes: () => presence?.workerNodeCount() ?? 1 });
    const scrapes =
      metrics && config.metricsPort !== undefined
        ? await (await import('./metrics/listener.js')).listenForScrapes(metrics, health, { host: config.metricsHost, port: config.metricsPort }, (error) =>
            logger.warn({ err: error }, 'metrics could not be collected'),
          )
        : undefined;
    if (runsWork) {
      await dispatcher.start();
      await workflowRunner.start();
      await outbox.start();
      await webhookSender.start();
      timers.start();
    }
    await presence?.start();
    // Last, once nothing can fail (a port in use): a failed start would leave an account whose key no one saw.
    const initialAccount = options.createInitialAccount ? await users.createFirstAccount() : undefined;

    let closing: Promise<void> | undefined;
    return {
      url: config.publicUrl,
      metricsUrl: scrapes?.url,
      config,
      services,
      initialAccount,
      close: () =>
        (closing ??= (async () => {
          health.beginStop();
          timers.stop();
          // Live streams never end by themselves; the server would wait for them.
          sse.close();
          if (app) await drainConnections(app.server, options.drainWindowMs);
          await app?.close();
          await scrapes?.close();
          // Running batches and steps finish and commit; past the timeout the runtime closes under them and their
          // work, still queued in the database, runs after the next start (or on another node).
          const finished = await settlesWithin(Promise.all([dispatcher.stop(), workflowRunner.stop()]), config.shutdownTimeout * 1000);
          if (!finished) logger.warn({ seconds: config.shutdownTimeout }, 'shutdown timeout: work still running is handed back to the queue');
          // After the runner: sends its last steps committed stay pending, and go out after the next start.
          await outbox.stop();
          await webhookSender.stop();
          await presence?.stop();
          await signals.close();
          await bus.close();
          await runtime.close();
          await store.close();
          lock?.release();
        })()),
    };
  } catch (error) {
    await runtime.close().catch(() => undefined);
    await store.close().catch(() => undefined);
    lock?.release();
    throw error;
  }
}
