// The component runtime: prepares component code on save, and loads and runs it in sandboxed worker processes.
import fs from 'node:fs';
import path from 'node:path';
import { inspectIn } from './inspection.js';
import { invokeIn, type InvokeHooks } from './invocation.js';
import { locatePlatform } from './locations.js';
import { Npm } from './npm.js';
import { checkOptions, type RuntimeOptions } from './options.js';
import { PackageCache } from './packages.js';
import { WorkerPool } from './pool.js';
import { Preparer } from './prepare.js';
import type { ComponentInfo, InvocationRequest, InvocationResult, PreparedComponent } from './types.js';
import { WorkerProcess } from './worker-process.js';

export * from './types.js';
export { RuntimeClosedError, WorkerExitError, type WorkerExitReason } from './errors.js';
export type { InvokeHooks } from './invocation.js';
export type { RuntimeLogger, RuntimeOptions } from './options.js';

/** What a worker must be able to read to run a component. */
function readNeeds(component: PreparedComponent): string[] {
  return [component.artifactPath, ...component.readPaths];
}

export class ComponentRuntime {
  private readonly options: Readonly<RuntimeOptions>;
  private readonly preparer: Preparer;
  private readonly pool: WorkerPool;

  constructor(options: RuntimeOptions) {
    const checked = checkOptions(options);
    // Permission checks compare real paths: a data folder reached through a symlink must be named by its target.
    fs.mkdirSync(checked.dataDir, { recursive: true });
    const dataDir = fs.realpathSync(checked.dataDir);
    this.options = Object.freeze({ ...checked, dataDir });
    const packagesDir = path.join(dataDir, 'packages');
    const npm = new Npm(path.join(packagesDir, '.npm', 'home'), path.join(packagesDir, '.npm', 'cache'), checked.logger);
    this.preparer = new Preparer(path.join(dataDir, 'code'), new PackageCache(packagesDir, npm, checked.logger), checked.logger);
    const platformPaths = locatePlatform().readPaths;
    this.pool = new WorkerPool({
      size: checked.poolSize,
      start: (accountId, allowRead, onExit) =>
        WorkerProcess.start({
          accountId,
          // @pipedream/platform is public code every component may load.
          allowRead: [...new Set([...platformPaths, ...allowRead])],
          memoryMb: checked.workerMemoryMb,
          startTimeoutMs: checked.loadTimeoutMs,
          logger: checked.logger,
          onExit: (worker) => {
            checked.logger.debug({ accountId, pid: worker.pid }, 'worker process ended');
            onExit(worker);
          },
        }),
    });
  }

  /** Checks, bundles and installs the imports of `code` without running it. Throws ComponentLoadError. */
  prepare(code: string): Promise<PreparedComponent> {
    return this.preparer.prepare(code);
  }

  /** Loads the component in a worker of `accountId` and describes it. Throws ComponentLoadError. */
  inspect(accountId: string, component: PreparedComponent): Promise<ComponentInfo> {
    return this.pool.use(accountId, readNeeds(component), (worker) => inspectIn(worker, component, this.options.loadTimeoutMs));
  }

  /**
   * Runs `run` for each event of the request in order, or the hook it names. Failures of the component (errors,
   * timeouts, crashes) come back as outcome errors; the promise rejects only for faults of the runtime itself.
   */
  async invoke(request: InvocationRequest, hooks?: InvokeHooks): Promise<InvocationResult> {
    if (request.method === 'run' && (request.events ?? []).length === 0) return { outcomes: [], dbWrites: {} };
    return this.pool.use(request.accountId, readNeeds(request.component), (worker) =>
      invokeIn(worker, request, hooks, this.options.logger),
    );
  }

  /** Kills all workers; pending and later calls reject with RuntimeClosedError. */
  close(): Promise<void> {
    return this.pool.close();
  }
}
