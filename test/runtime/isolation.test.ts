// Hostile components are contained: each failure is reported on its own event, and the pool and other accounts carry on.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import type { InvocationOutcome, PreparedComponent } from '../../src/runtime/index.js';
import { AccountUsers, resolveWorkerUser } from '../../src/runtime/worker-user.js';
import { createRuntime, request, runCode, source, type TestRuntime } from './helpers.js';

const HOSTILE = 'acct_hostile';
const BYSTANDER = 'acct_bystander';
const MARKER = 'TRIBUTARY_TEST_SERVER_SECRET';

let t: TestRuntime;
/** Another account's component that reports its worker's pid and a per-worker call counter. */
let bystander: PreparedComponent;

async function bystanderRun(): Promise<{ pid: number; calls: number }> {
  const result = await t.runtime.invoke(request(BYSTANDER, bystander));
  expect(result.outcomes[0]!.error).toBeUndefined();
  return result.outcomes[0]!.emits[0]!.event as { pid: number; calls: number };
}

/** Runs `fn` between two calls of the bystander, which must find its warm worker alive with its state intact. */
async function contained<T>(fn: () => Promise<T>): Promise<T> {
  const before = await bystanderRun();
  const result = await fn();
  const after = await bystanderRun();
  expect(after).toEqual({ pid: before.pid, calls: before.calls + 1 });
  return result;
}

async function hostile(body: string, overrides: Parameters<typeof request>[2] = {}): Promise<InvocationOutcome> {
  const result = await runCode(t.runtime, HOSTILE, source(body), { timeoutMs: 2_000, ...overrides });
  return result.outcomes[0]!;
}

beforeAll(async () => {
  process.env[MARKER] = 'must-not-leak';
  t = createRuntime({ poolSize: 3, workerMemoryMb: 64 });
  bystander = await t.runtime.prepare(source('globalThis.calls = (globalThis.calls ?? 0) + 1; this.$emit({ pid: process.pid, calls: globalThis.calls });'));
});

afterAll(async () => {
  delete process.env[MARKER];
  await t.close();
});

describe('runaway code', () => {
  it('times out an endless loop alone: the events before and after it run', async () => {
    const result = await contained(() =>
      runCode(
        t.runtime,
        HOSTILE,
        source('if (event.n === 2) for (;;) {} this.db.set("n" + event.n, true); this.$emit(event);', 'props: { db: "$.service.db" },'),
        { events: [{ n: 1 }, { n: 2 }, { n: 3 }], timeoutMs: 2_000 },
      ),
    );
    const [before, looping, after] = result.outcomes;
    expect(before!.emits).toEqual([{ event: { n: 1 } }]);
    expect(before!.error).toBeUndefined();
    expect(looping!.error).toMatchObject({ name: 'TimeoutError', message: 'run timed out after 2000 ms' });
    expect(looping!.emits).toEqual([]);
    expect(after!.emits).toEqual([{ event: { n: 3 } }]);
    expect(after!.error).toBeUndefined();
    expect(result.dbWrites).toEqual({ n1: true, n3: true });
    // The pool still works for the same account.
    expect((await hostile('this.$emit("after");')).emits).toEqual([{ event: 'after' }]);
  });

  it('fails only the event that killed its worker: the others run, seeing the db writes of those before them', async () => {
    const result = await contained(() =>
      runCode(
        t.runtime,
        HOSTILE,
        source(
          'if (event.n === 2) process.exit(4); const sawN1 = this.db.get("n1") ?? false; this.db.set("n" + event.n, true); this.$emit({ n: event.n, sawN1 });',
          'props: { db: "$.service.db" },',
        ),
        { events: [{ n: 1 }, { n: 2 }, { n: 3 }], timeoutMs: 5_000 },
      ),
    );
    const [before, exiting, after] = result.outcomes;
    expect(before).toMatchObject({ emits: [{ event: { n: 1, sawN1: false } }] });
    expect(before!.error).toBeUndefined();
    expect(exiting).toMatchObject({ emits: [], error: { name: 'ProcessExitError', message: 'the component called process.exit(4)' } });
    expect(after).toMatchObject({ emits: [{ event: { n: 3, sawN1: true } }] });
    expect(after!.error).toBeUndefined();
    expect(result.dbWrites).toEqual({ n1: true, n3: true });
  });

  it('gives each run of a batch its own timeout', async () => {
    // Three runs of 600 ms take longer than one timeout of 1,500 ms together, but none does alone.
    const result = await runCode(t.runtime, HOSTILE, source('await new Promise((resolve) => setTimeout(resolve, 600)); this.$emit(event.n);'), {
      events: [{ n: 1 }, { n: 2 }, { n: 3 }],
      timeoutMs: 1_500,
    });
    expect(result.outcomes.map((o) => [o.error, o.emits])).toEqual([1, 2, 3].map((n) => [undefined, [{ event: n }]]));
  });

  it('keeps the lines a run logged before it timed out, alone and in a batch', async () => {
    const result = await contained(() =>
      runCode(
        t.runtime,
        HOSTILE,
        source('console.log("event", event.n); if (event.n === 2) { console.warn("waiting"); await new Promise(() => {}); } this.$emit(event.n);'),
        { events: [{ n: 1 }, { n: 2 }, { n: 3 }], timeoutMs: 1_000 },
      ),
    );
    const lines = (outcome: InvocationOutcome | undefined) => outcome!.logs.map(({ k, msg }) => ({ k, msg }));
    const [first, hung, last] = result.outcomes;
    expect(hung).toMatchObject({ emits: [], error: { name: 'TimeoutError', message: 'run timed out after 1000 ms' } });
    expect(lines(hung)).toEqual([
      { k: 'log', msg: 'event 2' },
      { k: 'warn', msg: 'waiting' },
    ]);
    expect(first).toMatchObject({ emits: [{ event: 1 }] });
    expect(lines(first)).toEqual([{ k: 'log', msg: 'event 1' }]);
    expect(last).toMatchObject({ emits: [{ event: 3 }] });
    expect(lines(last)).toEqual([{ k: 'log', msg: 'event 3' }]);
  });

  it('keeps the lines of a run stopped in a synchronous loop that went on logging', async () => {
    const outcome = await contained(() =>
      hostile(
        'const start = Date.now(); console.log("start"); let said = false; for (;;) if (!said && Date.now() - start > 300) { console.log("still looping"); said = true; }',
        {
          timeoutMs: 1_000,
        },
      ),
    );
    expect(outcome.error).toMatchObject({ name: 'TimeoutError', message: 'run timed out after 1000 ms' });
    expect(outcome.logs.map(({ k, msg }) => ({ k, msg }))).toEqual([
      { k: 'log', msg: 'start' },
      { k: 'log', msg: 'still looping' },
    ]);
  });

  it('does not give a run more time for calling respond()', async () => {
    const result = await contained(() =>
      runCode(
        t.runtime,
        HOSTILE,
        source(
          'await new Promise((r) => setTimeout(r, 2000)); this.http.respond({ status: 200, body: "early" }); await new Promise((r) => setTimeout(r, 2000)); this.$emit("late");',
          'props: { http: { type: "$.interface.http", customResponse: true } },',
        ),
        // Each wait fits the limit and both do not, by a second: a busy machine's late timers stay inside that margin.
        { events: [{ n: 1 }], timeoutMs: 3_000, customResponse: true },
      ),
    );
    expect(result.outcomes[0]).toMatchObject({ emits: [], error: { name: 'TimeoutError' }, response: { status: 200, body: 'early' } });
  });

  it("refuses a response body past respond()'s 8 MB that Buffer.byteLength was replaced to hide: nothing is answered", async () => {
    const responded: unknown[] = [];
    const prepared = await t.runtime.prepare(
      source(
        'Buffer.byteLength = () => 0; this.http.respond({ status: 200, body: "x".repeat(8 * 1024 * 1024 + 1) }); this.$emit("after");',
        'props: { http: { type: "$.interface.http", customResponse: true } },',
      ),
    );
    const result = await contained(() =>
      t.runtime.invoke(request(HOSTILE, prepared, { customResponse: true, timeoutMs: 5_000 }), { onRespond: (response) => responded.push(response) }),
    );
    expect(responded).toEqual([]);
    // The worker measures with the Buffer.byteLength it took at start (protocol.test.ts has the server's own check).
    expect(result.outcomes[0]).toMatchObject({
      emits: [],
      error: { name: 'RangeError', message: `respond(): the body is ${8 * 1024 * 1024 + 1} bytes; it may be at most ${8 * 1024 * 1024} bytes` },
    });
    expect(result.outcomes[0]!.response).toBeUndefined();
  });

  it('reports memory held outside the heap (Buffers) as out of memory', async () => {
    const outcome = await contained(() =>
      hostile('const held = []; for (;;) { held.push(Buffer.alloc(32 * 1024 * 1024, 1)); await new Promise((r) => setTimeout(r, 5)); }', {
        timeoutMs: 30_000,
      }),
    );
    expect(outcome.error).toMatchObject({ name: 'OutOfMemoryError', code: 'out_of_memory' });
    expect(outcome.error!.message).toMatch(/over the worker limit of 256 MB/);
  });

  it('reports a memory bomb as out of memory', async () => {
    const outcome = await contained(() =>
      hostile('const hoard = []; for (;;) hoard.push(new Array(100000).fill({ n: Math.random() }));', { timeoutMs: 30_000 }),
    );
    expect(outcome.error).toMatchObject({ name: 'OutOfMemoryError', code: 'out_of_memory' });
    expect(outcome.error!.message).toContain('64 MB');
  });

  it('reports process.exit as such', async () => {
    const outcome = await contained(() => hostile('process.exit(3);'));
    expect(outcome.error).toMatchObject({ name: 'ProcessExitError', message: 'the component called process.exit(3)' });
  });

  it('turns an unhandled rejection into the error of its run', async () => {
    const outcome = await hostile('Promise.reject(new Error("nobody caught me")); await new Promise(() => {});');
    expect(outcome.error).toMatchObject({ name: 'Error', message: 'nobody caught me' });
  });

  it('fails a run that leaves a rejected promise unhandled, even if it returns', async () => {
    const outcome = await hostile('Promise.reject(new Error("floating")); this.$emit("returned");');
    expect(outcome.error).toMatchObject({ message: 'floating' });
    expect(outcome.emits).toEqual([]);
  });

  it('turns an uncaught exception in a callback into the error of its run', async () => {
    const outcome = await hostile('setTimeout(() => { throw new TypeError("from a timer"); }, 0); await new Promise(() => {});');
    expect(outcome.error).toMatchObject({ name: 'TypeError', message: 'from a timer' });
  });

  it('reports a throw in each hook', async () => {
    const prepared = await t.runtime.prepare(`
      module.exports = {
        name: "throwing hooks", version: "1",
        hooks: {
          deploy() { throw new Error("deploy failed"); },
          async activate() { throw new Error("activate failed"); },
          deactivate() { return Promise.reject(new Error("deactivate failed")); },
        },
        run() {},
      };`);
    for (const method of ['deploy', 'activate', 'deactivate'] as const) {
      const result = await t.runtime.invoke(request(HOSTILE, prepared, { method }));
      expect(result.outcomes).toHaveLength(1);
      expect(result.outcomes[0]!.error).toMatchObject({ message: `${method} failed` });
    }
  });

  it('fails an event that emits too much, cleanly', async () => {
    const single = await hostile('try { this.$emit("x".repeat(2 * 1024 * 1024)); } catch {} this.$emit("small");');
    expect(single.error).toMatchObject({ name: 'RangeError' });
    expect(single.error!.message).toMatch(/an event may be at most 1048576 bytes/);
    expect(single.emits).toEqual([]);
    const many = await hostile('const chunk = "y".repeat(900 * 1024); for (let i = 0; i < 20; i++) this.$emit(chunk);');
    expect(many.error!.message).toMatch(/may total at most 8388608 bytes/);
    expect(many.emits).toEqual([]);
  });

  it("counts an emit's id and summary against the same limits as its event", async () => {
    // A 2 MB summary on a one-byte event was stored and listed whole: 3 such emits made a 75 MB page of event summaries.
    const summary = await hostile('this.$emit(1, { summary: "s".repeat(2 * 1024 * 1024) });');
    expect(summary.error).toMatchObject({
      name: 'RangeError',
      message: 'the emitted event is 2097153 bytes of JSON, id and summary; an event may be at most 1048576 bytes',
    });
    expect(summary.emits).toEqual([]);
    const id = await hostile('this.$emit(1, { id: "i".repeat(2 * 1024 * 1024) });');
    expect(id.error!.message).toBe('the emitted event is 2097153 bytes of JSON, id and summary; an event may be at most 1048576 bytes');
    const many = await hostile('for (let i = 0; i < 20; i++) this.$emit(i, { id: "i".repeat(450 * 1024) + i, summary: "s".repeat(450 * 1024) });');
    expect(many.error!.message).toBe('the events emitted by one call may total at most 8388608 bytes of JSON');
    expect(many.emits).toEqual([]);
    const fits = await hostile('this.$emit(1, { id: "i".repeat(1000), summary: "s".repeat(1000) });');
    expect(fits.error).toBeUndefined();
    expect(fits.emits).toEqual([{ event: 1, id: 'i'.repeat(1000), summary: 's'.repeat(1000) }]);
  });

  it('caps one $.service.db value at 1 MB and a whole db at 16 MB of JSON', async () => {
    const withDb = (body: string) => source(body, 'props: { db: "$.service.db" },');
    const big = (await runCode(t.runtime, HOSTILE, withDb('this.db.set("k", "x".repeat(1_100_000));'))).outcomes[0]!;
    expect(big.error).toMatchObject({ name: 'RangeError' });
    expect(big.error!.message).toMatch(/^a \$\.service\.db value may be at most 1048576 bytes of JSON; "k" would be 1100002$/);
    // The key JSON-quoted and cut to 100 characters, as the server's messages quote what they were given.
    const quoted = (await runCode(t.runtime, HOSTILE, withDb('this.db.set("a\\"b" + "k".repeat(120), "x".repeat(1_100_000));'))).outcomes[0]!;
    expect(quoted.error!.message).toBe(
      `a $.service.db value may be at most 1048576 bytes of JSON; "a\\"b${'k'.repeat(97)}"… (123 characters) would be 1100002`,
    );
    const result = await runCode(t.runtime, HOSTILE, withDb('for (let i = 0; i < 6; i++) this.db.set("k" + event.n + "-" + i, "x".repeat(1_000_000));'), {
      events: [{ n: 1 }, { n: 2 }, { n: 3 }],
      timeoutMs: 10_000,
    });
    expect(result.outcomes.map((o) => o.error?.message)).toEqual([undefined, undefined, "a source's $.service.db may hold at most 16777216 bytes of JSON"]);
    expect(Object.keys(result.dbWrites)).toHaveLength(12);
  });

  it('caps the timers a worker may hold pending, and frees a slot when a timer fires or is cleared', async () => {
    const outcome = await hostile(`
      const intervals = [];
      let refused;
      try { for (let i = 0; i < 1001; i++) intervals.push(setInterval(() => {}, 1e6)); } catch (error) { refused = error.message; }
      for (const interval of intervals) clearInterval(interval);
      await Promise.all(Array.from({ length: 1000 }, () => new Promise((resolve) => setTimeout(resolve, 0))));
      const again = Array.from({ length: 1000 }, () => setTimeout(() => {}, 1e6));
      again.forEach(clearTimeout);
      this.$emit({ held: intervals.length, refused, again: again.length });`);
    expect(outcome.error).toBeUndefined();
    expect(outcome.emits).toEqual([
      {
        event: {
          held: 1000,
          refused: 'a worker may hold at most 1000 pending timers (setTimeout, setInterval, setImmediate); clear the ones no longer needed',
          again: 1000,
        },
      },
    ]);
  });

  it('kills a worker that speaks out of protocol and reports it', async () => {
    // A `toJSON` on Object.prototype, which the worker's JSON.stringify of its report calls, puts a string where the
    // protocol wants a duration.
    const outcome = await contained(() =>
      hostile(`Object.defineProperty(Object.prototype, "toJSON", { configurable: true, writable: true, value: function () {
        if (this.t === "outcomes") { delete Object.prototype.toJSON; this.results[0].outcome.durationMs = "forged"; }
        return this;
      } });`),
    );
    expect(outcome.error).toMatchObject({ name: 'WorkerProtocolError', code: 'protocol_error' });
  });

  it("stops a worker that floods stderr, which the server's one thread would read whole, past 16 MB in one call", async () => {
    // Written to the descriptor itself, past console's limits: 32 MB, then an event that must not come.
    const outcome = await contained(() =>
      hostile(`const chunk = Buffer.alloc(65536, "x"); let left = 32 * 1024 * 1024;
        while (left > 0) { try { left -= require("fs").writeSync(2, chunk); } catch (error) { if (error.code !== "EAGAIN") throw error; } }
        this.$emit("flooded");`),
    );
    expect(outcome.emits).toEqual([]);
    expect(outcome.error).toMatchObject({
      name: 'WorkerCrashError',
      code: 'worker_crashed',
      message: 'the worker wrote more than 16 MB to stderr in one call; nothing keeps stderr output: log with console instead',
    });
  });
});

describe('sandbox', () => {
  it('shows no server environment variables', async () => {
    const outcome = await hostile('this.$emit(Object.assign({}, process.env));');
    expect(process.env[MARKER]).toBe('must-not-leak');
    const env = outcome.emits[0]!.event as Record<string, string>;
    expect(env[MARKER]).toBeUndefined();
    expect(Object.keys(env).sort()).toEqual(['NODE_ENV', 'TZ']);
  });

  it('cannot read files outside its code', async () => {
    const testFile = fileURLToPath(import.meta.url);
    for (const file of ['/etc/hostname', '/etc/passwd', testFile]) {
      const outcome = await hostile(`this.$emit(require("fs").readFileSync(${JSON.stringify(file)}, "utf8"));`);
      expect(outcome.error).toMatchObject({ code: 'ERR_ACCESS_DENIED' });
      expect(outcome.emits).toEqual([]);
    }
  });

  it("cannot read another account's code", async () => {
    const outcome = await hostile(`this.$emit(require("fs").readFileSync(${JSON.stringify(bystander.artifactPath)}, "utf8"));`);
    expect(outcome.error).toMatchObject({ code: 'ERR_ACCESS_DENIED' });
  });

  it('cannot write files', async () => {
    const target = path.join(os.tmpdir(), `tributary-sandbox-write-${process.pid}`);
    const outcome = await hostile(`require("fs").writeFileSync(${JSON.stringify(target)}, "x");`);
    expect(outcome.error).toMatchObject({ code: 'ERR_ACCESS_DENIED' });
    expect(fs.existsSync(target)).toBe(false);
  });

  it('cannot start processes or threads', async () => {
    const spawn = await hostile('require("child_process").execSync("echo hi");');
    expect(spawn.error).toMatchObject({ code: 'ERR_ACCESS_DENIED' });
    const thread = await hostile('new (require("worker_threads").Worker)("1", { eval: true });');
    expect(thread.error).toMatchObject({ code: 'ERR_ACCESS_DENIED' });
  });

  it('cannot write trace files, which the permission model lets through', async () => {
    const workerDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'runtime', 'worker');
    const traces = () => fs.readdirSync(workerDir).filter((name) => name.startsWith('node_trace'));
    expect(traces()).toEqual([]);
    const required = await hostile('const t = require("trace_events").createTracing({ categories: ["v8"] }); t.enable(); t.disable(); this.$emit("traced");');
    expect(required.emits).toEqual([]);
    expect(required.error).toMatchObject({ code: 'ERR_ACCESS_DENIED', message: 'trace_events.createTracing is not available to components' });
    const imported = await runCode(
      t.runtime,
      HOSTILE,
      'import { createTracing } from "node:trace_events"; export default { name: "t", version: "0.0.1", async run() { createTracing({ categories: ["v8"] }).enable(); this.$emit("traced"); } };',
    );
    expect(imported.outcomes[0]!.error).toMatchObject({ code: 'ERR_ACCESS_DENIED' });
    // A worker ended while tracing writes its file as it exits.
    await contained(() => hostile('process.exit(0);'));
    expect(traces()).toEqual([]);
  });

  it('leaves no core file when it crashes: its memory would land where every account may read it', async () => {
    const outcome = await hostile('this.$emit(process.report.getReport().userLimits.core_file_size_blocks);');
    expect(outcome.emits).toEqual([{ event: { soft: 0, hard: 0 } }]);
  });

  it('cannot signal the server or other workers', async () => {
    const outcome = await hostile('process.kill(process.ppid, "SIGKILL");');
    expect(outcome.error).toMatchObject({ code: 'EPERM' });
    const { pid } = await bystanderRun();
    const other = await contained(() => hostile(`process.kill(${pid}, "SIGKILL");`));
    expect(other.error).toMatchObject({ code: 'EPERM' });
  });

  it("cannot send another process the inspector's SIGUSR1 through process._debugProcess", async () => {
    // Stands in for the server: a Node process that would open its inspector on SIGUSR1; this one reports the signal.
    const victim = spawn(
      process.execPath,
      ['-e', 'for (const s of ["SIGUSR1", "SIGUSR2"]) process.on(s, () => console.log(s)); console.log("ready"); setInterval(() => {}, 1000);'],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    let heard = '';
    victim.stdout.on('data', (chunk: Buffer) => {
      heard += chunk.toString();
    });
    try {
      await waitFor(
        async () => heard,
        (text) => text.includes('ready'),
        { what: 'the victim process' },
      );
      const outcome = await hostile(`process._debugProcess(${victim.pid});`);
      expect(outcome.error).toMatchObject({ code: 'EPERM', message: '_debugProcess: own process only' });
      // A signal sent during the run is handled before this later one.
      victim.kill('SIGUSR2');
      await waitFor(
        async () => heard,
        (text) => text.includes('SIGUSR2'),
        { what: 'SIGUSR2' },
      );
      expect(heard.split('\n').filter(Boolean)).toEqual(['ready', 'SIGUSR2']);
    } finally {
      victim.kill('SIGKILL');
    }
  });

  it('runs at the niceness it is started with and cannot raise its own priority back', async () => {
    const niced = createRuntime({ poolSize: 1, workerNice: 5 });
    try {
      const result = await runCode(
        niced.runtime,
        HOSTILE,
        source(`
          const os = require("os");
          const before = os.getPriority();
          const attempt = (fn) => { try { fn(); return "allowed"; } catch (e) { return e.code; } };
          const raised = [attempt(() => os.setPriority(0)), attempt(() => os.setPriority(process.pid, -5)), attempt(() => os.setPriority(0, 4))];
          os.setPriority(7);
          this.$emit({ before, raised, after: os.getPriority() });`),
      );
      expect(result.outcomes[0]!.emits).toEqual([{ event: { before: 5, raised: ['EPERM', 'EPERM', 'EPERM'], after: 7 } }]);
    } finally {
      await niced.close();
    }
  });

  it('cannot reach the IPC channel through process.send', async () => {
    const outcome = await hostile('this.$emit([typeof process.send, typeof process._send, typeof process.disconnect]);');
    expect(outcome.emits).toEqual([{ event: ['undefined', 'undefined', 'undefined'] }]);
  });
});

describe('unforgeable IPC and accounting', () => {
  // An outcomes frame as the runtime would write it (length, then a V8-serialized message), but without the token.
  const FORGE = `
    const v8 = require("v8");
    const serializer = new v8.DefaultSerializer();
    serializer.writeHeader();
    serializer.writeValue({ t: "outcomes", id: 1, index: 0, done: true,
      results: [{ outcome: { emits: [{ event: "forged" }], logs: [], durationMs: 0 }, dbWrites: {} }] });
    const body = serializer.releaseBuffer();
    const length = Buffer.alloc(4);
    length.writeUInt32BE(body.length);
    require("fs").writeSync(3, Buffer.concat([length, body]));
    await new Promise((resolve) => setTimeout(resolve, 200));
    this.$emit("not forged");`;

  it('takes no frame component code writes to the IPC descriptor for the runtime’s: the worker is killed for it', async () => {
    const outcome = await contained(() => hostile(FORGE));
    expect(outcome.emits).toEqual([]);
    expect(outcome.error).toMatchObject({ name: 'WorkerProtocolError', code: 'protocol_error' });
    expect(outcome.error!.message).toContain("lacks the worker's token");
  });

  it('refuses a forged frame at its first bytes, before the server keeps what its header announces', async () => {
    // A header announcing 64 MB, then 1 MB of it: the server must not wait for (and keep) the rest to find no token.
    const outcome = await contained(() =>
      hostile(`const fs = require("fs");
        const write = (bytes) => { for (let at = 0; at < bytes.length; ) { try { at += fs.writeSync(3, bytes, at); } catch (error) { if (error.code !== "EAGAIN") throw error; } } };
        const head = Buffer.alloc(4); head.writeUInt32BE(64 * 1024 * 1024);
        write(head); write(Buffer.alloc(1024 * 1024, 0xff));
        await new Promise((resolve) => setTimeout(resolve, 60_000));`),
    );
    expect(outcome.error).toMatchObject({
      name: 'WorkerProtocolError',
      code: 'protocol_error',
      message: "malformed worker message: it lacks the worker's token (written to the channel by component code?)",
    });
  });

  it('cannot patch the serializer, typed arrays or Buffers to read the token, nor install async hooks', async () => {
    const outcome = await hostile(`
      const v8 = require("v8");
      const targets = {
        serializer: [v8.Serializer.prototype, "writeValue"],
        defaultSerializer: [v8.DefaultSerializer.prototype, "_writeHostObject"],
        typedArray: [Object.getPrototypeOf(Uint8Array.prototype), "set"],
        buffer: [Buffer.prototype, "set"],
      };
      const result = {};
      for (const [name, [target, key]] of Object.entries(targets)) {
        const before = target[key];
        try { target[key] = () => {}; } catch {}
        result[name] = target[key] === before ? "unchanged" : "patched";
      }
      // Shadowing the length a Buffer reports would hand over each serialized message.
      try { Object.defineProperty(Buffer.prototype, "length", { get() { return 0; } }); } catch {}
      result.bufferLength = Buffer.from("abc").length === 3 ? "unchanged" : "patched";
      // So would its byteLength, which fs.writeSync reads as the worker writes each frame to the channel.
      try { Object.defineProperty(Buffer.prototype, "byteLength", { get() { return 0; } }); } catch {}
      try { Object.defineProperty(Object.getPrototypeOf(Uint8Array.prototype), "byteLength", { get() { return 0; } }); } catch {}
      result.bufferByteLength = Buffer.from("abc").byteLength === 3 ? "unchanged" : "patched";
      try { require("async_hooks").createHook({ init() {} }).enable(); result.asyncHook = "installed"; } catch (error) { result.asyncHook = error.code; }
      this.$emit(result);`);
    expect(outcome.emits).toEqual([
      {
        event: {
          serializer: 'unchanged',
          defaultSerializer: 'unchanged',
          typedArray: 'unchanged',
          buffer: 'unchanged',
          bufferLength: 'unchanged',
          bufferByteLength: 'unchanged',
          asyncHook: 'ERR_ACCESS_DENIED',
        },
      },
    ]);
  });

  it('bills the CPU time the server measures, not what the worker says', async () => {
    const busy = await runCode(
      t.runtime,
      HOSTILE,
      source('const start = process.cpuUsage(); while (process.cpuUsage(start).user + process.cpuUsage(start).system < 60_000) {} performance.now = () => 0;'),
    );
    // The kernel counts CPU time in 10 ms ticks, sampled: 60 ms burned may read as 50 or less; a forged count reads 0.
    expect(busy.cpuMs).toBeGreaterThanOrEqual(40);
    // Waiting is not computing: a run asleep for 300 ms uses almost no CPU.
    const sleepy = await runCode(t.runtime, HOSTILE, source('await new Promise((resolve) => setTimeout(resolve, 300));'));
    expect(sleepy.cpuMs).toBeLessThan(300);
  });

  it('bills CPU time used by timers between runs to the next run of the account', async () => {
    const code = source(`
      if (event.n === 1) {
        globalThis.burned = false;
        setTimeout(() => { const start = process.cpuUsage(); while (process.cpuUsage(start).user + process.cpuUsage(start).system < 60_000) {} globalThis.burned = true; }, 10);
        return;
      }
      while (!globalThis.burned) await new Promise((resolve) => setTimeout(resolve, 5));`);
    const prepared = await t.runtime.prepare(code);
    await t.runtime.invoke(request(HOSTILE, prepared, { events: [{ n: 1 }] }));
    const next = await t.runtime.invoke(request(HOSTILE, prepared, { events: [{ n: 2 }] }));
    // As above: 10 ms kernel ticks, sampled.
    expect(next.cpuMs).toBeGreaterThanOrEqual(40);
  });
});

describe('least privilege', () => {
  // Only root can start processes as another user; elsewhere workers run as the server's user by design.
  it.skipIf(process.getuid?.() !== 0)('runs workers as an unprivileged user when the server is root, still able to load and run code', async () => {
    const user = resolveWorkerUser('auto');
    expect(user).toEqual({ uid: 65534, gid: 65534 });
    const unprivileged = createRuntime({ poolSize: 1, workerUser: user });
    try {
      const result = await runCode(unprivileged.runtime, HOSTILE, source('this.$emit([process.getuid(), process.getgid()]);'));
      expect(result.outcomes[0]!.emits).toEqual([{ event: [65534, 65534] }]);
      // The data folder is traversable for the workers, not listable; the bundles are found by name only.
      expect(fs.statSync(unprivileged.dataDir).mode & 0o777).toBe(0o711);
      expect(fs.statSync(path.join(unprivileged.dataDir, 'code')).mode & 0o777).toBe(0o711);
    } finally {
      await unprivileged.close();
    }
  });

  it.skipIf(process.getuid?.() !== 0)('falls back to the server user, and says why, when the worker user cannot reach the data folder', async () => {
    const closed = fs.mkdtempSync(path.join(os.tmpdir(), 'tributary-closed-'));
    fs.chmodSync(closed, 0o700);
    const fallback = createRuntime({ poolSize: 1, workerUser: { uid: 65534, gid: 65534 } }, closed);
    try {
      const result = await runCode(fallback.runtime, HOSTILE, source('this.$emit(process.getuid());'));
      expect(result.outcomes[0]!.emits).toEqual([{ event: 0 }]);
      expect(fallback.logs).toContainEqual(expect.objectContaining({ level: 'warn', obj: { path: closed, uid: 65534 } }));
    } finally {
      await fallback.close();
      fs.rmSync(closed, { recursive: true, force: true });
    }
  });

  it.skipIf(process.getuid?.() !== 0)("gives each account its own user with per-account, owning a folder no other account's user may enter", async () => {
    const separate = createRuntime({ poolSize: 2, workerUser: 'per-account' });
    try {
      const whoAmI = source('this.$emit(process.getuid());');
      const first = await runCode(separate.runtime, 'acct_first', whoAmI);
      const second = await runCode(separate.runtime, 'acct_second', whoAmI);
      expect([first.outcomes[0]!.emits, second.outcomes[0]!.emits]).toEqual([[{ event: 200_000 }], [{ event: 200_001 }]]);
      const accounts = path.join(separate.dataDir, 'accounts');
      const folders = fs.readdirSync(accounts).map((name) => fs.statSync(path.join(accounts, name)));
      expect(folders.map((stat) => [stat.uid, stat.mode & 0o777]).sort()).toEqual([
        [200_000, 0o700],
        [200_001, 0o700],
      ]);
      // The server's bundles are its own: no worker user may enter code/.
      expect(fs.statSync(path.join(separate.dataDir, 'code')).mode & 0o777).toBe(0o700);
      // The same account keeps its user after a restart.
      expect(new AccountUsers(separate.dataDir).userFor('acct_first')).toEqual({ uid: 200_000, gid: 200_000 });
    } finally {
      await separate.close();
    }
  });

  it('resolves the worker user setting', () => {
    expect(resolveWorkerUser('same')).toBeUndefined();
    if (process.getuid?.() === 0) expect(resolveWorkerUser('per-account')).toBe('per-account');
    expect(resolveWorkerUser('1234:5678')).toEqual({ uid: 1234, gid: 5678 });
    expect(() => resolveWorkerUser('no-such-user-zz9')).toThrow('worker user "no-such-user-zz9" does not exist');
  });
});

describe('accounts', () => {
  it("never runs one account's code in another account's worker", async () => {
    const writer = source('globalThis.leaked = event.secret; this.$emit({ pid: process.pid, seen: globalThis.leaked });');
    const reader = source('this.$emit({ pid: process.pid, seen: globalThis.leaked ?? null });');
    const a1 = await runCode(t.runtime, 'acct_a', writer, { events: [{ secret: 'A-only' }] });
    const aPid = (a1.outcomes[0]!.emits[0]!.event as { pid: number }).pid;
    // Account A's warm worker is reused for A: its global state is still there.
    const a2 = await runCode(t.runtime, 'acct_a', reader);
    expect(a2.outcomes[0]!.emits[0]!.event).toEqual({ pid: aPid, seen: 'A-only' });
    const b = await runCode(t.runtime, 'acct_b', reader);
    const bEvent = b.outcomes[0]!.emits[0]!.event as { pid: number; seen: unknown };
    expect(bEvent.seen).toBeNull();
    expect(bEvent.pid).not.toBe(aPid);
  });

  it('cannot tell from its own bundle whether other accounts run the same code', async () => {
    // A hard link's count and change time would move with each account that saved the same code.
    const code = source('const { nlink } = require("fs").statSync(__filename); this.$emit({ nlink });');
    const runs = [];
    for (const account of ['acct_same_1', 'acct_same_2', 'acct_same_3']) runs.push(await runCode(t.runtime, account, code));
    expect(runs.map((run) => run.outcomes[0]!.emits)).toEqual([[{ event: { nlink: 1 } }], [{ event: { nlink: 1 } }], [{ event: { nlink: 1 } }]]);
  });

  it('warms a worker only when that waits for no call and stops no worker', async () => {
    const one = createRuntime({ poolSize: 1 });
    try {
      const prepared = await one.runtime.prepare(source('if (event.wait) await new Promise((r) => setTimeout(r, event.wait)); this.$emit(event.n);'));
      // A free slot: a worker of the account starts, with the bundle loaded.
      expect(await one.runtime.warm('acct_w1', prepared)).toBe(true);
      expect(one.runtime.workerStates()).toEqual({ starting: 0, busy: 0, idle: 1 });
      // The account's idle worker serves it again.
      expect(await one.runtime.warm('acct_w1', prepared)).toBe(true);
      // The one slot holds another account's idle worker, which warming would have to stop.
      expect(await one.runtime.warm('acct_w2', prepared)).toBe(false);
      // The account's worker is busy with a call: warming does not wait behind it.
      const running = one.runtime.invoke(request('acct_w1', prepared, { events: [{ n: 1, wait: 300 }] }));
      await waitFor(
        async () => one.runtime.workerStates().busy,
        (busy) => busy === 1,
        { what: 'the call to take the worker' },
      );
      expect(await one.runtime.warm('acct_w1', prepared)).toBe(false);
      expect((await running).outcomes[0]!.emits[0]!.event).toBe(1);
      expect(one.runtime.workerStates()).toEqual({ starting: 0, busy: 0, idle: 1 });
    } finally {
      await one.close();
    }
  });

  it('queues calls beyond the pool size and serves them all', async () => {
    const prepared = await t.runtime.prepare(source('await Promise.resolve(); this.$emit(event.n);'));
    const accounts = ['q1', 'q2', 'q3', 'q4', 'q1', 'q2'];
    const results = await Promise.all(accounts.map((a, n) => t.runtime.invoke(request(a, prepared, { events: [{ n }] }))));
    expect(results.map((r) => r.outcomes[0]!.emits[0]!.event)).toEqual([0, 1, 2, 3, 4, 5]);
  });
});
