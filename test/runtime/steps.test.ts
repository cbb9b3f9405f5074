// Workflow steps (method `step`): loading code as a step, `run({ steps, $ })`, and what `$` records for the server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ComponentLoadError,
  type HttpResponse,
  type InvocationOutcome,
  type InvocationResult,
  type InvokeHooks,
  type RuntimeLogger,
  type StepInput,
} from '../../src/runtime/index.js';
import { WorkerExitError } from '../../src/runtime/errors.js';
import { invokeIn } from '../../src/runtime/invocation.js';
import { type CallResult, type FromWorker, ProtocolError, type ToWorker } from '../../src/runtime/protocol.js';
import { StrayErrors } from '../../src/runtime/stray-errors.js';
import type { WorkerProcess } from '../../src/runtime/worker-process.js';
import { createRuntime, request, type TestRuntime } from './helpers.js';

let t: TestRuntime;
beforeAll(() => {
  t = createRuntime({ poolSize: 2 });
});
afterAll(async () => {
  await t.close();
});

const ACCOUNT = 'acct_steps';

/** A StepInput whose trigger event is `event`. */
const input = (event: unknown, props: Record<string, unknown> = {}): StepInput => ({ steps: { trigger: { event } }, props });

/** Runs `code` as a step once per input. */
async function runStep(
  code: string,
  inputs: StepInput[] = [input({})],
  overrides: Parameters<typeof request>[2] = {},
  hooks?: InvokeHooks,
): Promise<InvocationResult> {
  const component = await t.runtime.prepare(code);
  return t.runtime.invoke(request(ACCOUNT, component, { method: 'step', events: inputs, ...overrides }), hooks);
}

/** The only outcome of a step run with one input. */
async function stepOutcome(code: string, overrides: Parameters<typeof request>[2] = {}): Promise<InvocationOutcome> {
  const result = await runStep(code, [input({})], overrides);
  expect(result.outcomes).toHaveLength(1);
  return result.outcomes[0]!;
}

/** A code step whose run body is `body`. */
const step = (body: string, extra = '') => `export default defineComponent({ ${extra} async run({ steps, $ }) { ${body} } });`;

async function loadError(code: string, asStep: boolean): Promise<ComponentLoadError> {
  const prepared = await t.runtime.prepare(code);
  const error = await t.runtime.inspect(ACCOUNT, prepared, { asStep }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ComponentLoadError);
  return error as ComponentLoadError;
}

const STEP_INFO = {
  name: 'code step',
  version: '0.0.0',
  type: 'action',
  props: [],
  hooks: { deploy: false, activate: false, deactivate: false },
  hasRun: true,
};

describe('loading as a step', () => {
  it('takes a defineComponent(...) code step without importing it, with the step defaults', async () => {
    const prepared = await t.runtime.prepare(step('return steps.trigger.event.n * 2;'));
    expect(await t.runtime.inspect(ACCOUNT, prepared, { asStep: true })).toEqual(STEP_INFO);
    const result = await t.runtime.invoke(request(ACCOUNT, prepared, { method: 'step', events: [input({ n: 21 })] }));
    expect(result).toEqual({
      outcomes: [{ emits: [], logs: [], step: { returnValue: 42, exports: {}, sends: [] }, durationMs: expect.any(Number) }],
      dbWrites: {},
      cpuMs: expect.any(Number),
    });
  });

  it('takes a plain object with run, through module.exports or export default', async () => {
    for (const code of [
      'module.exports = { async run({ steps }) { return steps.trigger.event; } };',
      'export default { run: ({ steps }) => steps.trigger.event };',
    ]) {
      const prepared = await t.runtime.prepare(code);
      expect(await t.runtime.inspect(ACCOUNT, prepared, { asStep: true })).toEqual(STEP_INFO);
      const result = await t.runtime.invoke(request(ACCOUNT, prepared, { method: 'step', events: [input({ a: [1, 'x'] })] }));
      expect(result.outcomes[0]!.step).toEqual({ returnValue: { a: [1, 'x'] }, exports: {}, sends: [] });
    }
  });

  it('keeps a name, version, key and props it declares, and is an action whatever its type says', async () => {
    const prepared = await t.runtime.prepare(
      'export default defineComponent({ key: "acme-do", name: "Do it", version: "1.2.3", type: "source", props: { text: "string" }, async run() {} });',
    );
    expect(await t.runtime.inspect(ACCOUNT, prepared, { asStep: true })).toEqual({
      ...STEP_INFO,
      key: 'acme-do',
      name: 'Do it',
      version: '1.2.3',
      props: [{ name: 'text', type: 'string' }],
    });
  });

  it('refuses a step without a run function', async () => {
    const error = await loadError('export default defineComponent({ name: "no run", props: {} });', true);
    expect(error.code).toBe('load_failed');
    expect(error.message).toBe('a step needs a `run` function: `export default defineComponent({ async run({ steps, $ }) { … } })`');
  });

  it('refuses an empty step as one without a run function', async () => {
    const error = await loadError('export default defineComponent({});', true);
    expect([error.code, error.message]).toEqual([
      'load_failed',
      'a step needs a `run` function: `export default defineComponent({ async run({ steps, $ }) { … } })`',
    ]);
  });

  it('still needs a name and version when not loaded as a step', async () => {
    const code = 'module.exports = { async run({ steps }) { return 1; } };';
    expect((await loadError(code, false)).code).toBe('missing_name');
    // The same bundle as a step in the same worker: the description is cached per way of loading.
    expect(await t.runtime.inspect(ACCOUNT, await t.runtime.prepare(code), { asStep: true })).toEqual(STEP_INFO);
    expect((await loadError(code, false)).message).toBe('the component has no `name` (a string)');
    expect((await loadError('module.exports = { name: "n", run() {} };', false)).code).toBe('missing_version');
  });

  it('gives sources defineComponent as a global too', async () => {
    const prepared = await t.runtime.prepare('module.exports = defineComponent({ name: "s", version: "1", run(event) { this.$emit(event); } });');
    const result = await t.runtime.invoke(request(ACCOUNT, prepared, { events: [{ n: 1 }] }));
    expect(result.outcomes[0]!.emits).toEqual([{ event: { n: 1 } }]);
    expect(result.outcomes[0]!.step).toBeUndefined();
  });
});

describe('run({ steps, $ })', () => {
  it('runs each StepInput in order with its own prop values, defaults, apps with $auth and methods', async () => {
    const code = `
      const slack = { type: "app", app: "slack", methods: { token() { return this.$auth.token; } } };
      export default defineComponent({
        props: { slack, text: "string", count: { type: "integer", default: 3 } },
        methods: { line() { return this.text + "x" + this.count; } },
        async run({ steps, $ }) {
          return { line: this.line(), token: this.slack.token(), n: steps.trigger.event.n, hasEmit: typeof this.$emit };
        },
      });`;
    const result = await runStep(code, [input({ n: 1 }, { text: 'a' }), input({ n: 2 }, { text: 'b', count: 5 })], {
      props: { text: 'ignored for steps' },
      auths: { slack: { token: 'xoxb' } },
    });
    expect(result.outcomes.map((o) => o.step)).toEqual([
      { returnValue: { line: 'ax3', token: 'xoxb', n: 1, hasEmit: 'undefined' }, exports: {}, sends: [] },
      { returnValue: { line: 'bx5', token: 'xoxb', n: 2, hasEmit: 'undefined' }, exports: {}, sends: [] },
    ]);
    expect(result.outcomes.map((o) => [o.emits, o.error])).toEqual([
      [[], undefined],
      [[], undefined],
    ]);
  });

  it('copies the return value as JSON, keeps null, leaves out undefined and fails on data JSON cannot hold', async () => {
    expect((await stepOutcome(step('const v = { d: new Date(0), u: undefined, s: "x" }; setTimeout(() => { v.s = "y"; }); return v;'))).step).toEqual({
      returnValue: { d: '1970-01-01T00:00:00.000Z', s: 'x' },
      exports: {},
      sends: [],
    });
    expect((await stepOutcome(step('return null;'))).step).toEqual({ returnValue: null, exports: {}, sends: [] });
    expect((await stepOutcome(step('return undefined;'))).step).toEqual({ exports: {}, sends: [] });
    const cyclic = await stepOutcome(step('const a = {}; a.a = a; return a;'));
    expect(cyclic.step).toBeUndefined();
    expect(cyclic.error).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/^the step's return value is not JSON-serialisable: /) });
  });

  it('records exports, the last value of a name winning, and $summary as a string', async () => {
    const outcome = await stepOutcome(
      step(`
        const { export: put } = $;
        const data = { list: [1, 2] };
        put("data", data);
        data.list.push(3);
        $.export("count", 1);
        $.export("count", 2);
        $.export("gone", "soon");
        $.export("gone", undefined);
        $.export("__proto__", { odd: true });
        $.export("$summary", "Sent 2 messages");
        return "done";`),
    );
    expect(outcome.error).toBeUndefined();
    expect(outcome.step).toEqual({
      returnValue: 'done',
      exports: JSON.parse('{"data":{"list":[1,2]},"count":2,"__proto__":{"odd":true},"$summary":"Sent 2 messages"}'),
      sends: [],
    });
    expect(Object.keys(outcome.step!.exports)).toEqual(['data', 'count', '__proto__', '$summary']);
  });

  it('refuses a $summary that is not a string, an empty name, $return_value, and values JSON cannot hold', async () => {
    const messages = await stepOutcome(
      step(`
        const messages = [];
        for (const [name, value] of [["$summary", 5], ["$summary", { a: 1 }], ["", 1], [7, 1], ["$return_value", 1], ["f", () => 1], ["big", 10n], ["a\\"b" + "n".repeat(200), () => 1], ["g", { ["k\\"".repeat(60)]: () => 1 }]]) {
          try { $.export(name, value); messages.push("exported"); } catch (e) { messages.push(e.name + ": " + e.message); }
        }
        return messages;`),
    );
    expect(messages.step?.returnValue).toEqual([
      'TypeError: $.export("$summary", …) takes a string, not number',
      'TypeError: $.export("$summary", …) takes a string, not object',
      'TypeError: $.export() needs a name, a non-empty string',
      'TypeError: $.export() needs a name, a non-empty string',
      'TypeError: $.export(): "$return_value" is the step\'s return value; return it from run instead',
      'TypeError: the value exported as "f" is not JSON-serialisable: a function',
      'TypeError: the value exported as "big" is not JSON-serialisable: Do not know how to serialize a BigInt',
      // Names and keys a component chose, quoted as every value in a message is: JSON, the first 100 characters.
      `TypeError: the value exported as "a\\"b${'n'.repeat(97)}"… (203 characters) is not JSON-serialisable: a function`,
      `TypeError: the value exported as "g" is not JSON-serialisable: a function at key "${'k\\"'.repeat(50)}"… (120 characters)`,
    ]);
    expect(messages.step?.exports).toEqual({});
  });

  it('fails the call when return value, exports and sends pass the size limit, even if the step catches it', async () => {
    const outcome = await stepOutcome(
      step('const chunk = "x".repeat(900 * 1024); try { for (let i = 0; i < 10; i++) $.export("part" + i, chunk); } catch {} return "caught";'),
    );
    // The exports that fit stay, to show how far it got.
    expect(outcome.step).toEqual({ exports: Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`part${i}`, 'x'.repeat(900 * 1024)])), sends: [] });
    expect(outcome.error).toMatchObject({
      name: 'RangeError',
      message: "a step's return value, exports, sends and $.flow.exit() reason may total at most 8388608 bytes of JSON per call",
    });
  });

  it('fails the call on an exit reason past the size limit, naming the reason', async () => {
    const outcome = await stepOutcome(step('$.export("a", 1); try { $.flow.exit("x".repeat(9 * 1024 * 1024)); } catch {} return "caught";'));
    expect(outcome.step).toEqual({ exports: { a: 1 }, sends: [] });
    expect(outcome.error).toMatchObject({
      name: 'RangeError',
      message: `the $.flow.exit() reason is ${9 * 1024 * 1024 + 2} bytes of JSON, past the limit: a step's return value, exports, sends and $.flow.exit() reason may total at most 8388608 bytes of JSON per call`,
    });
  });
});

describe('$.flow', () => {
  it('exit ends the step at once, keeping the exports made before it', async () => {
    const outcome = await stepOutcome(
      step('$.export("before", 1); console.log("running"); $.flow.exit("nothing to do"); console.log("after"); $.export("after", 2);'),
    );
    expect(outcome).toEqual({
      emits: [],
      logs: [{ k: 'log', ts: expect.any(Number), msg: 'running' }],
      step: { exports: { before: 1 }, exit: { reason: 'nothing to do' }, sends: [] },
      durationMs: expect.any(Number),
    });
  });

  it('exit passes through a try/finally that awaits, and keeps a reason that is not a string as its JSON text', async () => {
    const outcome = await stepOutcome(
      step(`
        try {
          await new Promise((resolve) => setTimeout(resolve, 5));
          $.flow.exit(42);
          console.log("not reached");
        } finally {
          await new Promise((resolve) => setTimeout(resolve, 5));
          console.log("cleaned up");
        }
        console.log("not reached either");
        return "not returned";`),
    );
    expect(outcome.error).toBeUndefined();
    expect(outcome.logs.map((l) => l.msg)).toEqual(['cleaned up']);
    expect(outcome.step).toEqual({ exports: {}, exit: { reason: '42' }, sends: [] });
    const object = await stepOutcome(step('$.flow.exit({ why: "empty", n: [1, null] });'));
    expect(object.step).toEqual({ exports: {}, exit: { reason: '{"why":"empty","n":[1,null]}' }, sends: [] });
    const none = await stepOutcome(step('$.flow.exit();'));
    expect(none.step).toEqual({ exports: {}, exit: {}, sends: [] });
  });

  it('exit refuses a reason JSON cannot hold with a TypeError the step may catch', async () => {
    const outcome = await stepOutcome(
      step(`
        const messages = [];
        for (const reason of [() => 1, 10n, Symbol("s")]) {
          try { $.flow.exit(reason); } catch (e) { messages.push(e.name + ": " + e.message); }
        }
        return messages;`),
    );
    expect(outcome.step).toEqual({
      returnValue: [
        'TypeError: the $.flow.exit() reason is not JSON-serialisable: a function',
        'TypeError: the $.flow.exit() reason is not JSON-serialisable: Do not know how to serialize a BigInt',
        'TypeError: the $.flow.exit() reason is not JSON-serialisable: a symbol',
      ],
      exports: {},
      sends: [],
    });
  });

  it('exit still ends the step when the step catches it: its next use of $ throws it again', async () => {
    const outcome = await stepOutcome(step('try { $.flow.exit("first"); } catch {} console.log("caught"); $.export("late", 1); console.log("not reached");'));
    expect(outcome.error).toBeUndefined();
    expect(outcome.logs.map((l) => l.msg)).toEqual(['caught']);
    expect(outcome.step).toEqual({ exports: {}, exit: { reason: 'first' }, sends: [] });
  });

  it('exit from a callback ends the step too', async () => {
    const outcome = await stepOutcome(step('$.export("a", 1); setTimeout(() => $.flow.exit("later")); await new Promise(() => {});'));
    expect(outcome.error).toBeUndefined();
    expect(outcome.step).toEqual({ exports: { a: 1 }, exit: { reason: 'later' }, sends: [] });
  });

  it('delay records the last delay asked for, caps it at 365 days, and lets the step go on', async () => {
    const outcome = await stepOutcome(step('const handle = $.flow.delay(1000); $.flow.delay(2500); return { handle, keys: Object.keys(handle) };'));
    expect(outcome.step).toEqual({ returnValue: { handle: {}, keys: ['resume_url', 'cancel_url'] }, exports: {}, delayMs: 2500, sends: [] });
    const capped = await stepOutcome(step('$.flow.delay(400 * 24 * 3600 * 1000);'));
    expect(capped.step).toEqual({ exports: {}, delayMs: 31_536_000_000, sends: [] });
    expect(capped.logs).toEqual([
      { k: 'warn', ts: expect.any(Number), msg: '$.flow.delay(34560000000) was cut to 31536000000 ms (365 days), the longest delay' },
    ]);
  });

  it('rerun, which Tributary does not have, throws a NotSupportedError saying so that the step may catch', async () => {
    const message = "$.flow.rerun() is not supported: Tributary keeps no step's rerun count or context; $.flow.delay(ms) makes the next step due later";
    const caught = await stepOutcome(step('try { $.flow.rerun(1000, { n: 1 }, 3); } catch (e) { return [e.name, e.message]; }'));
    expect(caught.step).toEqual({ returnValue: ['NotSupportedError', message], exports: {}, sends: [] });
    const failed = await stepOutcome(step('$.flow.rerun(1000);'));
    expect(failed.error).toMatchObject({ name: 'NotSupportedError', message });
  });

  it('delay refuses what is not a finite number of at least 0', async () => {
    const outcome = await stepOutcome(
      step(`
        const messages = [];
        for (const ms of [-1, Infinity, NaN, "10", null, undefined]) {
          try { $.flow.delay(ms); } catch (e) { messages.push(e.name + ": " + e.message); }
        }
        return messages;`),
    );
    expect(outcome.step).toEqual({
      returnValue: ['-1', 'Infinity', 'NaN', '"10"', 'null', 'undefined'].map(
        (shown) => `TypeError: $.flow.delay() takes a number of milliseconds (finite, at least 0), not ${shown}`,
      ),
      exports: {},
      sends: [],
    });
  });
});

describe('$.send', () => {
  it('records each send in call order, as a JSON copy of its argument', async () => {
    const outcome = await stepOutcome(
      step(`
        const config = { url: "https://example.test/hook", method: "POST", headers: { a: "b" }, params: { q: 1 }, data: { n: 1 } };
        $.send.http(config);
        config.data.n = 2;
        $.send.email({ subject: "Hi", text: "plain" });
        $.send.email({ subject: "Hi", html: "<b>rich</b>" });
        $.send.s3({ bucket: "my-bucket", prefix: "logs/", payload: [1, 2] });
        $.send.emit({ raw_event: { id: 7 } });
        $.send.emit({ raw_event: 8, name: "\\u{1F600}".repeat(200), summary: "eight" });
        $.send.emit({ name: "Yoda" });
        $.send.emit({ raw_event: 9 }, "jedi");
        const { sse } = $.send;
        sse({ channel: "updates", payload: { ok: true } });`),
    );
    expect(outcome.error).toBeUndefined();
    expect(outcome.step).toEqual({
      exports: {},
      sends: [
        { kind: 'http', payload: { url: 'https://example.test/hook', method: 'POST', headers: { a: 'b' }, params: { q: 1 }, data: { n: 1 } } },
        { kind: 'email', payload: { subject: 'Hi', text: 'plain' } },
        { kind: 'email', payload: { subject: 'Hi', html: '<b>rich</b>' } },
        { kind: 's3', payload: { bucket: 'my-bucket', prefix: 'logs/', payload: [1, 2] } },
        { kind: 'emit', payload: { raw_event: { id: 7 } } },
        { kind: 'emit', payload: { raw_event: 8, name: '😀'.repeat(200), summary: 'eight' } },
        { kind: 'emit', payload: { raw_event: { name: 'Yoda' } } },
        { kind: 'emit', payload: { raw_event: { raw_event: 9 }, name: 'jedi' } },
        { kind: 'sse', payload: { channel: 'updates', payload: { ok: true } } },
      ],
    });
  });

  it.each([
    ['$.send.http("https://x.test")', '$.send.http() takes an object: { url, method?, headers?, params?, data? }'],
    ['$.send.http({ method: "GET" })', '$.send.http() needs config.url, a non-empty string'],
    ['$.send.http({ url: "https://x.test", method: 1 })', '$.send.http(): config.method must be one of GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS, got 1'],
    [
      '$.send.http({ url: "https://x.test", method: "BOGUS" })',
      '$.send.http(): config.method must be one of GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS, got "BOGUS"',
    ],
    ['$.send.http({ url: "ftp://x.test/y" })', '$.send.http(): config.url must be an http or https URL, got "ftp://x.test/y"'],
    ['$.send.http({ url: "https://x.test", headers: "a: b" })', '$.send.http(): config.headers must be an object'],
    ['$.send.http({ url: "https://x.test", params: [] })', '$.send.http(): config.params must be an object'],
    ['$.send.email({ text: "no subject" })', '$.send.email() needs a subject (a string)'],
    ['$.send.email({ subject: "s" })', '$.send.email() needs a text or html body (a string)'],
    ['$.send.email({ subject: "s", html: 1 })', '$.send.email(): html must be a string'],
    ['$.send.s3({ payload: 1 })', '$.send.s3() needs a bucket (a non-empty string)'],
    ['$.send.s3({ bucket: "b" })', '$.send.s3() needs a payload'],
    ['$.send.emit({ raw_event: undefined })', '$.send.emit() needs a raw_event'],
    ['$.send.emit()', '$.send.emit() needs an event: $.send.emit(event, channel?)'],
    ['$.send.emit(1, 7)', '$.send.emit() name (the channel) must be a string'],
    ['$.send.emit(1, "$logs")', `$.send.emit() name "$logs" is reserved for the workflow's $logs stream`],
    ['$.send.emit({ raw_event: 1, name: 7 })', '$.send.emit() name (the channel) must be a string'],
    ['$.send.emit({ raw_event: 1, name: "$errors" })', `$.send.emit() name "$errors" is reserved for the workflow's $errors stream`],
    ['$.send.emit({ raw_event: 1, name: "c".repeat(201) })', '$.send.emit() name (the channel) may be at most 200 characters'],
    ['$.send.emit({ raw_event: 1, summary: {} })', '$.send.emit() summary must be a string'],
    ['$.send.sse({ channel: "\\u{1F600}".repeat(201), payload: 1 })', '$.send.sse(): channel may be at most 200 characters'],
    [
      '$.send.http({ url: "ftp://" + "x".repeat(120) })',
      `$.send.http(): config.url must be an http or https URL, got "ftp://${'x'.repeat(94)}"… (126 characters)`,
    ],
    [
      '$.send.http({ url: "https://x.test", method: "M".repeat(150) })',
      `$.send.http(): config.method must be one of GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS, got "${'M'.repeat(100)}"… (150 characters)`,
    ],
    ['$.send.sse({ payload: 1 })', '$.send.sse() needs a channel (a non-empty string)'],
    ['$.send.sse(null)', '$.send.sse() takes an object: { channel, payload }'],
  ])('fails the call on a malformed send: %s', async (call, message) => {
    const outcome = await stepOutcome(step(`$.send.emit({ raw_event: "first" }); ${call};`));
    expect(outcome.step).toBeUndefined();
    expect(outcome.error).toMatchObject({ name: 'TypeError', message });
  });
});

describe('failures and db', () => {
  const counting = (body: string) =>
    step(`const n = (this.db.get("n") ?? 0) + 1; this.db.set("n", n); $.export("n", n); ${body} return n;`, 'props: { db: "$.service.db" },');

  it('threads db writes of successful steps through the request', async () => {
    const result = await runStep(counting(''), [input({}), input({})], { db: { n: 10 } });
    expect(result.outcomes.map((o) => o.step)).toEqual([
      { returnValue: 11, exports: { n: 11 }, sends: [] },
      { returnValue: 12, exports: { n: 12 }, sends: [] },
    ]);
    expect(result.dbWrites).toEqual({ n: 12 });
  });

  it('reports a throwing step as an error with its exports only, and no db writes', async () => {
    const result = await runStep(counting('$.send.emit({ raw_event: 1 }); if (steps.trigger.event.fail) throw new RangeError("bad input");'), [
      input({ fail: true }),
      input({}),
    ]);
    const [failed, ok] = result.outcomes;
    expect(failed).toEqual({
      emits: [],
      logs: [],
      error: { name: 'RangeError', message: 'bad input', stack: expect.stringContaining('RangeError: bad input') },
      durationMs: expect.any(Number),
      step: { exports: { n: 1 }, sends: [] },
    });
    expect(ok!.step).toEqual({ returnValue: 1, exports: { n: 1 }, sends: [{ kind: 'emit', payload: { raw_event: 1 } }] });
    expect(result.dbWrites).toEqual({ n: 1 });
    const alone = await runStep(counting('throw new Error("always");'));
    expect(alone.outcomes[0]!.step).toEqual({ exports: { n: 1 }, sends: [] });
    expect(alone.dbWrites).toEqual({});
  });

  it('keeps the name and message of a ConfigurationError of @pipedream/platform', async () => {
    const outcome = await stepOutcome(
      'import { ConfigurationError } from "@pipedream/platform";\nexport default defineComponent({ async run() { throw new ConfigurationError("Set an API key first"); } });',
    );
    expect(outcome.step).toBeUndefined();
    expect(outcome.error).toMatchObject({ name: 'ConfigurationError', message: 'Set an API key first' });
    expect(outcome.error!.stack.split('\n')[0]).toBe('ConfigurationError: Set an API key first');
  });

  it('reports a step that never ends as timed out, with its exports only', async () => {
    const outcome = await stepOutcome(step('$.export("a", 1); $.send.emit({ raw_event: 1 }); await new Promise(() => {});'), { timeoutMs: 1_000 });
    expect(outcome.step).toEqual({ exports: { a: 1 }, sends: [] });
    expect(outcome.error).toMatchObject({ name: 'TimeoutError', message: 'step timed out after 1000 ms', code: 'timeout' });
  });

  it('fails the call given a StepInput that is not { steps, props }', async () => {
    const result = await runStep(step('return 1;'), [{ steps: {} } as StepInput]);
    expect(result.outcomes[0]!.error).toMatchObject({ name: 'TypeError', message: 'a step input must be { steps, props }, both objects' });
  });
});

describe('$.respond', () => {
  const responder = step(
    'await $.respond({ status: 201, headers: { "x-step": "1" }, body: { ok: steps.trigger.event.n } }); $.respond({ status: 500 }); return "answered";',
  );

  it('answers the triggering request at once when the trigger allows custom responses', async () => {
    const responded: Array<[HttpResponse, number]> = [];
    const result = await runStep(
      responder,
      [input({ n: 1 }), input({ n: 2 })],
      { customResponse: true },
      {
        onRespond(response, index) {
          responded.push([response, index]);
        },
      },
    );
    const expected = (n: number) => ({ status: 201, headers: { 'x-step': '1', 'content-type': 'application/json' }, body: `{"ok":${n}}` });
    expect(responded).toEqual([
      [expected(1), 0],
      [expected(2), 1],
    ]);
    expect(result.outcomes.map((o) => [o.response, o.step?.returnValue])).toEqual([
      [expected(1), 'answered'],
      [expected(2), 'answered'],
    ]);
    expect(result.outcomes[0]!.logs).toEqual([
      { k: 'warn', ts: expect.any(Number), msg: 'respond() was called more than once; only the first response was sent' },
    ]);
  });

  it('is ignored with a warning when the trigger does not allow custom responses', async () => {
    let called = false;
    const result = await runStep(
      responder,
      [input({ n: 1 })],
      {},
      {
        onRespond() {
          called = true;
        },
      },
    );
    expect(called).toBe(false);
    expect(result.outcomes[0]!.response).toBeUndefined();
    expect(result.outcomes[0]!.step).toEqual({ returnValue: 'answered', exports: {}, sends: [] });
    expect(result.outcomes[0]!.logs.map((l) => [l.k, l.msg])).toEqual([
      ['warn', '$.respond() was ignored: only a workflow whose trigger is {"type":"http","custom_response":true} answers its requests with it'],
      ['warn', '$.respond() was ignored: only a workflow whose trigger is {"type":"http","custom_response":true} answers its requests with it'],
    ]);
  });

  it('fails the step on an invalid response', async () => {
    const outcome = await stepOutcome(step('try { $.respond({ status: 700 }); } catch {} return 1;'), { customResponse: true });
    expect(outcome.step).toBeUndefined();
    expect(outcome.response).toBeUndefined();
    expect(outcome.error).toMatchObject({ name: 'TypeError', message: 'respond() needs a status that is an integer from 100 to 599, not 700' });
  });
});

describe("the server's checks on step outcomes", () => {
  const prepared = { codeHash: 'h', artifactPath: '/x.cjs', readPaths: [], packages: {} };
  const stepOk = { emits: [], logs: [], step: { exports: {}, sends: [] }, durationMs: 1 };
  const quiet: RuntimeLogger = { info() {}, warn() {}, error() {}, debug() {} };

  /** A worker that answers with `replies` and dies of a protocol error as a real one is killed for it. */
  function fakeWorker(replies: FromWorker[]): { worker: WorkerProcess; sent: ToWorker[] } {
    const sent: ToWorker[] = [];
    const worker = {
      lastCallCpuMs: 0,
      strays: new StrayErrors(undefined),
      nextRequestId: () => 1,
      extendTimeout() {},
      async call(message: ToWorker, handle: (m: FromWorker) => boolean) {
        sent.push(message);
        for (const reply of replies) {
          try {
            if (handle(reply)) return;
          } catch (error) {
            throw error instanceof ProtocolError ? new WorkerExitError('protocol_error', error.message) : error;
          }
        }
      },
    };
    return { worker: worker as unknown as WorkerProcess, sent };
  }

  const stepRequest = (overrides: Parameters<typeof request>[2] = {}) =>
    request(ACCOUNT, prepared, { method: 'step', events: [input({ n: 1 })], customResponse: true, ...overrides });

  it('sends StepInputs as JSON text and takes a respond message during a step call', async () => {
    const response = { status: 200, headers: {}, body: 'ok' };
    const { worker, sent } = fakeWorker([
      { t: 'respond', id: 1, index: 0, response },
      { t: 'outcomes', id: 1, index: 0, results: [{ outcome: stepOk, dbWrites: { k: 1 } }], done: true },
    ]);
    const responded: HttpResponse[] = [];
    const report = await invokeIn(worker, stepRequest(), '/x.cjs', { onRespond: (r) => responded.push(r) }, quiet);
    expect(sent[0]).toMatchObject({ t: 'invoke', method: 'step', events: ['{"steps":{"trigger":{"event":{"n":1}}},"props":{}}'], customResponse: true });
    expect(responded).toEqual([response]);
    expect(report.outcomes).toEqual([{ ...stepOk, response }]);
    expect(report.stopped).toBeUndefined();
  });

  it('takes a failed step call that reports its exports and nothing else', async () => {
    const failed = { ...stepOk, step: { exports: { got: 2 }, sends: [] }, error: { name: 'Error', message: 'x', stack: 'x' } };
    const { worker } = fakeWorker([{ t: 'outcomes', id: 1, index: 0, results: [{ outcome: failed, dbWrites: {} }], done: true }]);
    const report = await invokeIn(worker, stepRequest({ events: [input({})] }), '/x.cjs', undefined, quiet);
    expect(report.outcomes).toEqual([failed]);
    expect(report.stopped).toBeUndefined();
  });

  it.each([
    ['a step outcome that also emits', 'step', { ...stepOk, emits: [{ event: 1 }] }, 'a step call reported no step outcome, or emits'],
    ['a successful step call without its outcome', 'step', { emits: [], logs: [], durationMs: 1 }, 'a step call reported no step outcome, or emits'],
    [
      'a failed step call with sends',
      'step',
      { ...stepOk, step: { exports: {}, sends: [{ kind: 'emit', payload: { raw_event: 1 } }] }, error: { name: 'Error', message: 'x', stack: 'x' } },
      'a failed call reported effects',
    ],
    [
      'a failed step call with a return value',
      'step',
      { ...stepOk, step: { exports: {}, sends: [], returnValue: 1 }, error: { name: 'Error', message: 'x', stack: 'x' } },
      'a failed call reported effects',
    ],
    ['a run call with a step outcome', 'run', stepOk, 'a run call reported a step outcome'],
  ] satisfies Array<[string, 'run' | 'step', CallResult['outcome'], string]>)('refuses %s', async (_what, method, outcome, message) => {
    const { worker } = fakeWorker([{ t: 'outcomes', id: 1, index: 0, results: [{ outcome, dbWrites: {} }], done: true }]);
    const report = await invokeIn(worker, stepRequest({ method, events: [input({})] }), '/x.cjs', undefined, quiet);
    expect(report.outcomes).toEqual([]);
    expect(report.stopped?.error).toMatchObject({ name: 'WorkerProtocolError', code: 'protocol_error', message });
  });
  describe('exports sent ahead of an outcome that never comes', () => {
    const exportOf = (index: number, name: string, value?: unknown): FromWorker =>
      value === undefined
        ? { t: 'exports', id: 1, index, values: {}, removed: [name] }
        : { t: 'exports', id: 1, index, values: { [name]: value }, removed: [] };

    it('keeps the exports of the call that was running when its worker stopped, and only of that call', async () => {
      const { worker } = fakeWorker([
        exportOf(1, 'early', 1),
        { t: 'outcomes', id: 1, index: 0, results: [{ outcome: stepOk, dbWrites: {} }], done: false },
        exportOf(1, '__proto__', { odd: true }),
        { t: 'exports', id: 1, index: 1, values: { late: [2], gone: 1 }, removed: ['early'] },
        exportOf(1, 'gone', undefined),
        // One that breaks the rules: the worker dies of it, and it is not kept.
        exportOf(1, '$summary', 3),
      ]);
      const report = await invokeIn(worker, stepRequest({ events: [input({}), input({}), input({})] }), '/x.cjs', undefined, quiet);
      expect(report.outcomes).toEqual([stepOk]);
      expect(report.stopped?.error).toMatchObject({ code: 'protocol_error', message: 'the export $summary must be a string' });
      expect(report.stopped?.exports).toEqual(JSON.parse('{"__proto__":{"odd":true},"late":[2]}'));
      expect(Object.keys(report.stopped?.exports ?? {})).toEqual(['__proto__', 'late']);
    });

    it('keeps none of a call whose outcome came, and none past the size limit', async () => {
      const big = 'x'.repeat(5 * 1024 * 1024);
      const { worker } = fakeWorker([
        exportOf(0, 'a', 1),
        { t: 'outcomes', id: 1, index: 0, results: [{ outcome: stepOk, dbWrites: {} }], done: false },
        exportOf(1, 'big', big),
        exportOf(1, 'big', 'small'),
        exportOf(1, 'other', big),
        exportOf(1, 'third', big),
      ]);
      const report = await invokeIn(worker, stepRequest({ events: [input({}), input({})] }), '/x.cjs', undefined, quiet);
      expect(report.stopped?.error).toMatchObject({
        code: 'protocol_error',
        message: "a step's exports may total at most 8388608 bytes of JSON per call",
      });
      expect(report.stopped?.exports).toEqual({ big: 'small', other: big });
    });

    it.each([
      [
        'of a call already reported',
        'step',
        [{ t: 'outcomes', id: 1, index: 0, results: [{ outcome: stepOk, dbWrites: {} }], done: false }, exportOf(0, 'a', 1)],
        'unexpected exports of event 0',
      ],
      ['of an earlier call than one that exported', 'step', [exportOf(1, 'a', 1), exportOf(0, 'a', 1)], 'unexpected exports of event 0'],
      ['of no call of the request', 'step', [exportOf(2, 'a', 1)], 'unexpected exports of event 2'],
      ['named $return_value', 'step', [exportOf(0, '$return_value', 1)], 'an export may not be named "$return_value"'],
      ['of a source run', 'run', [exportOf(0, 'a', 1)], 'a run call sent exports'],
    ] satisfies Array<[string, 'run' | 'step', FromWorker[], string]>)('refuses an export %s', async (_what, method, replies, message) => {
      const { worker } = fakeWorker(replies);
      const report = await invokeIn(worker, stepRequest({ method, events: [input({}), input({})] }), '/x.cjs', undefined, quiet);
      expect(report.stopped?.error).toMatchObject({ name: 'WorkerProtocolError', code: 'protocol_error', message });
    });
  });
});

describe('steps sharing a call but not their time left', () => {
  // A run waits `ms` (or for ever without one), then returns its `name`.
  const WAITING = step(
    'if (steps.trigger.event.ms === undefined) await new Promise(() => {}); await new Promise((r) => setTimeout(r, steps.trigger.event.ms)); return steps.trigger.event.name;',
  );

  it('runs a step again alone with its own time when a batchmate with less time left timed the call out', async () => {
    const inputs = [input({ name: 'short' }), input({ name: 'long', ms: 1500 })];
    const result = await runStep(WAITING, inputs, { timeoutMs: 500, eventTimeoutsMs: [500, 20_000] });
    expect(result.outcomes[0]!.error?.code).toBe('timeout');
    expect(result.outcomes[1]!.error).toBeUndefined();
    expect(result.outcomes[1]!.step?.returnValue).toBe('long');
  });

  it('gives the last step of the call its own time too', async () => {
    const inputs = [input({ name: 'quick', ms: 0 }), input({ name: 'long', ms: 1500 })];
    const result = await runStep(WAITING, inputs, { timeoutMs: 500, eventTimeoutsMs: [500, 20_000] });
    expect(result.outcomes.map((outcome) => outcome.error)).toEqual([undefined, undefined]);
    expect(result.outcomes.map((outcome) => outcome.step?.returnValue)).toEqual(['quick', 'long']);
  });
});

describe('exports of a step whose worker stopped', () => {
  it('keeps those the step made before its worker died, batched or alone, and nothing else of it', async () => {
    const code = step(
      'console.log("n", steps.trigger.event.n); $.export("n", steps.trigger.event.n); $.send.emit({ raw_event: 1 }); if (steps.trigger.event.n === 2) process.exit(1); return steps.trigger.event.n;',
    );
    const result = await runStep(code, [input({ n: 1 }), input({ n: 2 }), input({ n: 3 })], { timeoutMs: 10_000 });
    const [before, died, after] = result.outcomes;
    expect(before!.step).toEqual({ returnValue: 1, exports: { n: 1 }, sends: [{ kind: 'emit', payload: { raw_event: 1 } }] });
    expect(died).toEqual({
      emits: [],
      logs: [expect.objectContaining({ k: 'log', msg: 'n 2' })],
      error: expect.objectContaining({ name: 'ProcessExitError', code: 'process_exit' }),
      durationMs: expect.any(Number),
      step: { exports: { n: 2 }, sends: [] },
    });
    expect(after!.step).toEqual({ returnValue: 3, exports: { n: 3 }, sends: [{ kind: 'emit', payload: { raw_event: 1 } }] });
    // Past the first 100, exports are sent together, at the latest when the step next waits.
    const many = await stepOutcome(
      step('for (let i = 0; i < 150; i++) $.export("n" + i, i); $.export("n0", "last"); await new Promise((r) => setTimeout(r, 20)); for (;;) {}'),
      { timeoutMs: 1_000 },
    );
    expect(many.step?.exports).toEqual({ ...Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`n${i}`, i])), n0: 'last' });
    const timedOut = await stepOutcome(step('$.export("$summary", "looping"); $.export("big", "x".repeat(1000)); for (;;) {}'), { timeoutMs: 500 });
    expect(timedOut.error).toMatchObject({ name: 'TimeoutError', code: 'timeout' });
    expect(timedOut.step).toEqual({ exports: { $summary: 'looping', big: 'x'.repeat(1000) }, sends: [] });
  }, 30_000);
});
