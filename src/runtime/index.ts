// The component runtime: prepares component code on save, and loads and runs it in sandboxed worker processes.
import fs from 'node:fs';
import path from 'node:path';
import { LRUCache } from 'lru-cache';
import { AccountCode } from './account-code.js';
import { BundleNames } from './bundle-names.js';
import { type ConfigureResult, configureIn } from './configuration.js';
import { inspectIn } from './inspection.js';
import { callCount, invokeIn, invokeIsolatingFailures, type InvokeHooks } from './invocation.js';
import { locatePlatform, workerEntry } from './locations.js';
import { Npm } from './npm.js';
import { checkOptions, type RuntimeOptions } from './options.js';
import { PackageCache } from './packages.js';
import { WorkerPool } from './pool.js';
import { Preparer } from './prepare.js';
import type { ConfigureMessage } from './protocol.js';
import type {
  ComponentInfo,
  ConfigureRequest,
  InstallListener,
  InvocationRequest,
  InvocationResult,
  OptionsQuery,
  PreparedComponent,
  PropOptionsResult,
  ReloadPropsResult,
} from './types.js';
import { WorkerProcess } from './worker-process.js';
import { prepareWorkerUsers } from './worker-user.js';
import type { StrayErrorListener } from './stray-errors.js';

export * from './types.js';
export { RuntimeClosedError, WorkerExitError, type WorkerExitReason } from './errors.js';
export { applyDataStoreChanges, mergeDataStoreChanges } from './data-store-changes.js';
export type { InvokeHooks } from './invocation.js';
export type { RuntimeLogger, RuntimeOptions } from './options.js';

/** The account the readiness check starts a worker for: no real account id looks like it. */
const READINESS_ACCOUNT = '-readiness';
/**
 * A worker's own start (Node booting the sandbox, before any component code) may take this long whatever the load
 * timeout: on a loaded machine a boot can pass a lowered --load-timeout, and the call waiting on it got a 503.
 */
const MIN_WORKER_START_TIMEOUT_MS = 10_000;

export class ComponentRuntime {
  private readonly options: Readonly<RuntimeOptions>;
  private readonly preparer: Preparer;
  private readonly pool: WorkerPool;
  private readonly accountCode: AccountCode;
  /**
   * CPU time of ended workers that no call of theirs carried (WorkerProcess.unbilledCpuMs), by account, until the
   * account's next invocation carries it: else code a run left running would compute for free until its worker ends.
   */
  private readonly unbilledCpu = new LRUCache<string, number>({ maxSize: 100_000, sizeCalculation: () => 1 });

  private strayListener: StrayErrorListener | undefined;

  constructor(options: RuntimeOptions) {
    const checked = checkOptions(options);
    // Permission checks compare real paths: a data folder reached through a symlink must be named by its target.
    fs.mkdirSync(checked.dataDir, { recursive: true });
    const dataDir = fs.realpathSync(checked.dataDir);
    this.options = Object.freeze({ ...checked, dataDir });
    const packagesDir = path.join(dataDir, 'packages');
    const npm = new Npm(path.join(packagesDir, '.npm', 'home'), path.join(packagesDir, '.npm', 'cache'), checked.logger);
    const codeDir = path.join(dataDir, 'code');
    const users = prepareWorkerUsers(checked.workerUser, dataDir, [path.dirname(workerEntry()), ...locatePlatform().readPaths], checked.logger);
    const names = BundleNames.open(codeDir, users.accountsDir);
    this.preparer = new Preparer(codeDir, names, new PackageCache(packagesDir, npm, checked.logger), checked.logger);
    this.accountCode = new AccountCode(users.accountsDir, names, users.ownerOf);
    this.pool = new WorkerPool({
      size: checked.poolSize,
      // @pipedream/platform is public code any component may load; the extra CA file is read by Node as a worker starts.
      sharedReadPaths: [...locatePlatform().readPaths, ...(checked.extraCaFile === undefined ? [] : [checked.extraCaFile])],
      start: (accountId, allowRead, onExit) =>
        WorkerProcess.start({
          accountId,
          // The account's folder holds every bundle it uses, including ones saved after the worker started.
          allowRead: [this.accountCode.dir(accountId), ...allowRead],
          memoryMb: checked.workerMemoryMb,
          egress: checked.egress,
          extraCaFile: checked.extraCaFile,
          user: users.userFor(accountId),
          nice: checked.workerNice ?? 0,
          startTimeoutMs: Math.max(checked.loadTimeoutMs, MIN_WORKER_START_TIMEOUT_MS),
          logger: checked.logger,
          onStrayError: (origin, index, error) => this.strayListener?.(origin, index, error),
          onExit: (worker) => {
            const reason = worker.exit?.reason;
            // Stopping a worker on purpose is routine; a worker that died under component code is worth a look.
            const level = reason === 'evicted' || reason === 'closed' ? 'debug' : 'warn';
            checked.logger[level]({ accountId, pid: worker.pid, reason, detail: worker.exit?.message }, 'worker process ended');
            if (worker.unbilledCpuMs > 0) this.unbilledCpu.set(accountId, (this.unbilledCpu.get(accountId) ?? 0) + worker.unbilledCpuMs);
            onExit(worker);
          },
        }),
    });
  }

  /** Hears each error a component throws after its call ended (WorkerProcess reports the first of each call). */
  onStrayError(listener: StrayErrorListener): void {
    this.strayListener = listener;
  }

  /**
   * Checks, bundles and installs the imports of `code` without running it. Throws ComponentLoadError. `onProgress`
   * hears each npm package it imports being resolved and installed, or found already installed.
   */
  prepare(code: string, onProgress?: InstallListener): Promise<PreparedComponent> {
    return this.preparer.prepare(code, onProgress);
  }

  /**
   * Loads the component in a worker of `accountId` and describes it. Throws ComponentLoadError. With `asStep` it is
   * loaded as a workflow step: a plain object with `run` is enough (name "code step", version "0.0.0", type "action").
   */
  async inspect(accountId: string, component: PreparedComponent, options: { asStep?: boolean } = {}): Promise<ComponentInfo> {
    const artifactPath = await this.accountCode.link(accountId, component.artifactPath);
    const asStep = options.asStep === true;
    return this.pool.use(accountId, component.readPaths, (worker) => inspectIn(worker, artifactPath, this.options.loadTimeoutMs, asStep));
  }

  /**
   * Loads the component in a worker of `accountId`, if that waits for no call and stops no worker (see
   * WorkerPool.useIfFree); returns whether it did. Readies a node to run a source it may take over from another.
   */
  async warm(accountId: string, component: PreparedComponent): Promise<boolean> {
    const artifactPath = await this.accountCode.link(accountId, component.artifactPath);
    const loaded = await this.pool.useIfFree(accountId, component.readPaths, (worker) => inspectIn(worker, artifactPath, this.options.loadTimeoutMs, false));
    return loaded !== undefined;
  }

  /**
   * Runs `run` for each event of the request in order, `run({ steps, $ })` for each StepInput (method `step`), or
   * the hook it names. Failures of the component (errors, timeouts, crashes) come back as outcome errors; the
   * promise rejects only for faults of the runtime itself.
   */
  async invoke(request: InvocationRequest, hooks?: InvokeHooks): Promise<InvocationResult> {
    if (callCount(request) === 0) return { outcomes: [], dbWrites: {}, cpuMs: 0 };
    const artifactPath = await this.accountCode.link(request.accountId, request.component.artifactPath);
    const result = await invokeIsolatingFailures(request, hooks, (part, partHooks) =>
      this.pool.use(request.accountId, request.component.readPaths, (worker) => invokeIn(worker, part, artifactPath, partHooks, this.options.logger)),
    );
    // What the account's workers used after their last call before they ended, carried by its next invocation.
    const carried = this.unbilledCpu.get(request.accountId);
    if (carried !== undefined) {
      this.unbilledCpu.delete(request.accountId);
      result.cpuMs += carried;
    }
    return result;
  }

  /**
   * A prop's choices: its `options({ page, prevContext, query })` run in a worker of the account, within the
   * request's timeout (the load timeout by default). What goes wrong comes back in `errors`.
   */
  async propOptions(request: ConfigureRequest, query: OptionsQuery): Promise<PropOptionsResult> {
    const answer = await this.configure(request, { kind: 'options', ...query });
    const { cpuMs } = answer;
    if (answer.kind === 'options') {
      const { options, context, unusable } = answer;
      return unusable ? { options, context, errors: [], unusable, cpuMs } : { options, context, errors: [], cpuMs };
    }
    return { options: [], context: null, errors: [answer.kind === 'failed' ? answer.error : 'the worker gave no options'], cpuMs };
  }

  /** The full prop list for the configured values: the static props, then what `additionalProps()` returns. */
  async reloadProps(request: ConfigureRequest): Promise<ReloadPropsResult> {
    const answer = await this.configure(request, { kind: 'props' });
    const { cpuMs } = answer;
    if (answer.kind === 'props') return { props: answer.props, errors: [], cpuMs };
    return { props: undefined, errors: [answer.kind === 'failed' ? answer.error : 'the worker gave no props'], cpuMs };
  }

  private async configure(request: ConfigureRequest, what: ConfigureMessage['what']): Promise<ConfigureResult> {
    const artifactPath = await this.accountCode.link(request.accountId, request.component.artifactPath);
    const timeoutMs = request.timeoutMs ?? this.options.loadTimeoutMs;
    return this.pool.use(request.accountId, request.component.readPaths, (worker) => {
      const message: ConfigureMessage = {
        t: 'configure',
        id: worker.nextRequestId(),
        artifactPath,
        asStep: request.asStep,
        what,
        props: request.props,
        auths: request.auths,
      };
      if (request.dataStores) message.dataStores = request.dataStores;
      return configureIn(worker, message, timeoutMs);
    });
  }

  /**
   * Whether a worker can serve a call: one is alive, or one starts now (for an account of its own, and stays warm
   * like any other, so the next check finds it). Readiness asks this.
   */
  async canStartWorker(): Promise<boolean> {
    if (this.pool.liveWorkers() > 0) return true;
    try {
      await this.pool.use(READINESS_ACCOUNT, [], async () => undefined);
      return true;
    } catch {
      return false;
    }
  }

  /** Workers starting, running a call, or idle (for metrics). */
  workerStates(): { starting: number; busy: number; idle: number } {
    return this.pool.states();
  }

  /** Kills all workers; pending and later calls reject with RuntimeClosedError. */
  close(): Promise<void> {
    return this.pool.close();
  }
}
