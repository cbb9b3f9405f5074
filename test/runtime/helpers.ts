// Shared set-up for runtime tests: a runtime on a temporary data folder, a logger that records, and short-hands for calls.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ComponentRuntime, type InvocationRequest, type InvocationResult, type PreparedComponent, type RuntimeOptions } from '../../src/runtime/index.js';

export interface LogRecord {
  level: 'info' | 'warn' | 'error' | 'debug';
  obj: Record<string, unknown>;
  msg?: string;
}

export interface TestRuntime {
  runtime: ComponentRuntime;
  dataDir: string;
  logs: LogRecord[];
  close(): Promise<void>;
}

/** A runtime on `dataDir` whose log lines go to `logs`. */
function runtimeOn(dataDir: string, logs: LogRecord[], overrides: Partial<Omit<RuntimeOptions, 'logger' | 'dataDir'>>): ComponentRuntime {
  const at = (level: LogRecord['level']) => (obj: object, msg?: string) => {
    logs.push({ level, obj: obj as Record<string, unknown>, msg });
  };
  return new ComponentRuntime({
    dataDir,
    workerMemoryMb: 64,
    poolSize: 2,
    loadTimeoutMs: 10_000,
    logger: { info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') },
    ...overrides,
  });
}

export function createRuntime(overrides: Partial<Omit<RuntimeOptions, 'logger' | 'dataDir'>> = {}, parentDir = os.tmpdir()): TestRuntime {
  const dataDir = fs.mkdtempSync(path.join(parentDir, 'tributary-runtime-'));
  const logs: LogRecord[] = [];
  const runtime = runtimeOn(dataDir, logs, overrides);
  return {
    runtime,
    dataDir,
    logs,
    async close() {
      await runtime.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A request with empty props, auths and db; `overrides` fill in the rest. */
export function request(accountId: string, component: PreparedComponent, overrides: Partial<InvocationRequest> = {}): InvocationRequest {
  return {
    accountId,
    sourceId: 'dc_test',
    component,
    method: 'run',
    events: [{}],
    props: {},
    auths: {},
    db: {},
    timeoutMs: 10_000,
    ...overrides,
  };
}

/** Prepares `code` and runs it once for `accountId` with `overrides`. */
export async function runCode(
  runtime: ComponentRuntime,
  accountId: string,
  code: string,
  overrides: Partial<InvocationRequest> = {},
): Promise<InvocationResult> {
  const component = await runtime.prepare(code);
  return runtime.invoke(request(accountId, component, overrides));
}

/** A CommonJS source whose run body is `body` (inside `async run(event) { … }`). */
export function source(body: string, extra = ''): string {
  return `module.exports = { name: "test source", version: "0.0.1", ${extra} async run(event) { ${body} } };`;
}

/** Another runtime on the data folder of `t`, as after a restart or an upgrade (one worker); close it when done. */
export function reopenRuntime(t: Pick<TestRuntime, 'dataDir'>): { runtime: ComponentRuntime; logs: LogRecord[] } {
  const logs: LogRecord[] = [];
  return { runtime: runtimeOn(t.dataDir, logs, { poolSize: 1 }), logs };
}
