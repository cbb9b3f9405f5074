// Running components: `this`, emits, $.service.db across a batch, apps and methods, respond(), hooks and logs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HttpResponse } from '../../src/runtime/index.js';
import { createRuntime, request, runCode, source, type TestRuntime } from './helpers.js';

let t: TestRuntime;
beforeAll(() => {
  t = createRuntime({ poolSize: 2 });
});
afterAll(async () => {
  await t.close();
});

const ACCOUNT = 'acct_invoke';

describe('run and $emit', () => {
  it('runs each event of a batch in order and collects emits with their metadata', async () => {
    const result = await runCode(
      t.runtime,
      ACCOUNT,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: component code, with template literals of its own.
      source('this.$emit({ n: event.n * 2 }, { id: `e${event.n}`, name: "doubles", summary: `n=${event.n}`, ts: 1700000000000 + event.n });'),
      { events: [{ n: 1 }, { n: 2 }] },
    );
    expect(result.outcomes.map((o) => o.emits)).toEqual([
      [{ event: { n: 2 }, id: 'e1', name: 'doubles', summary: 'n=1', ts: 1700000000001 }],
      [{ event: { n: 4 }, id: 'e2', name: 'doubles', summary: 'n=2', ts: 1700000000002 }],
    ]);
    expect(result.outcomes.every((o) => o.error === undefined && o.durationMs >= 0)).toBe(true);
    expect(result.dbWrites).toEqual({});
  });

  it('snapshots the event at $emit and works when destructured from this', async () => {
    const result = await runCode(t.runtime, ACCOUNT, source('const { $emit } = this; const e = { v: 1 }; $emit(e); e.v = 2; $emit(e);'));
    expect(result.outcomes[0]!.emits).toEqual([{ event: { v: 1 } }, { event: { v: 2 } }]);
  });

  it('emits each event unchanged when the source has no run', async () => {
    const prepared = await t.runtime.prepare('module.exports = { name: "relay", version: "1" };');
    const result = await t.runtime.invoke(request(ACCOUNT, prepared, { events: [{ a: 1 }, 'text'] }));
    expect(result.outcomes.map((o) => o.emits)).toEqual([[{ event: { a: 1 } }], [{ event: 'text' }]]);
  });

  it('requires an id when a dedupe strategy is set', async () => {
    const result = await runCode(t.runtime, ACCOUNT, source('this.$emit({ a: 1 });', 'dedupe: "greatest",'));
    expect(result.outcomes[0]!.error).toMatchObject({ name: 'Error', message: '$emit needs an id when dedupe is "greatest"' });
    expect(result.outcomes[0]!.emits).toEqual([]);
    const relay = await runCode(t.runtime, ACCOUNT, 'module.exports = { name: "relay", version: "1", dedupe: "unique" };');
    expect(relay.outcomes[0]!.error?.message).toBe('$emit needs an id when dedupe is "unique"');
  });

  it('refuses the reserved channel names $errors and $logs', async () => {
    for (const name of ['$errors', '$logs']) {
      const result = await runCode(t.runtime, ACCOUNT, source(`this.$emit({}, { name: "${name}" });`));
      expect(result.outcomes[0]!.error).toMatchObject({ name: 'TypeError', message: `$emit name "${name}" is reserved for the source's ${name} stream` });
    }
  });

  it('refuses a ts that is not an integer and an event that is not JSON', async () => {
    const ts = await runCode(t.runtime, ACCOUNT, source('this.$emit({}, { ts: 1.5 });'));
    expect(ts.outcomes[0]!.error).toMatchObject({ name: 'TypeError', message: '$emit ts must be an integer (epoch milliseconds)' });
    const text = await runCode(t.runtime, ACCOUNT, source('this.$emit({}, { ts: "2026-01-01" });'));
    expect(text.outcomes[0]!.error).toMatchObject({ name: 'TypeError', message: '$emit ts must be an integer (epoch milliseconds)' });
    const cyclic = await runCode(t.runtime, ACCOUNT, source('const a = {}; a.self = a; this.$emit(a);'));
    expect(cyclic.outcomes[0]!.error?.message).toMatch(/^the emitted event is not JSON-serialisable/);
    const big = await runCode(t.runtime, ACCOUNT, source('this.$emit({ n: 10n });'));
    expect(big.outcomes[0]!.error?.message).toMatch(/BigInt/);
  });

  it("takes a ts of NaN as none: Date.parse() of what it cannot read, as the reference registry's Stripe sources pass", async () => {
    // stripe-new-payment emits `{ id: event.id, ts: Date.parse(event.created) }`, and Stripe's `created` is epoch seconds.
    const result = await runCode(t.runtime, ACCOUNT, source('this.$emit({ n: 1 }, { id: "evt_1", summary: "paid", ts: Date.parse(1700000000) });'));
    expect(result.outcomes[0]!.error).toBeUndefined();
    expect(result.outcomes[0]!.emits).toEqual([{ event: { n: 1 }, id: 'evt_1', summary: 'paid' }]);
  });

  it('fails only the event that throws; the others keep their emits', async () => {
    const result = await runCode(t.runtime, ACCOUNT, source('if (event.fail) throw new RangeError("bad event"); this.$emit(event);'), {
      events: [{ n: 1 }, { fail: true }, { n: 3 }],
    });
    const [first, second, third] = result.outcomes;
    expect(first!.emits).toEqual([{ event: { n: 1 } }]);
    expect(second!.emits).toEqual([]);
    expect(second!.error).toMatchObject({ name: 'RangeError', message: 'bad event' });
    expect(second!.error!.stack).toContain('RangeError: bad event');
    expect(third!.emits).toEqual([{ event: { n: 3 } }]);
  });

  it('reports stacks by line of the component source, without the worker machinery', async () => {
    const result = await runCode(
      t.runtime,
      ACCOUNT,
      'import { format } from "node:util";\nexport default {\n  name: "s", version: "1",\n  methods: { helper() {\n    throw new Error(format("deep %d", 1));\n  } },\n  run() { this.helper(); },\n};',
    );
    const stack = result.outcomes[0]!.error!.stack;
    expect(stack.split('\n')[0]).toBe('Error: deep 1');
    // Named as the account wrote it, not by where the server keeps the bundle.
    expect(stack).toContain('at Object.helper (component.js:5:11)');
    expect(stack).not.toMatch(/runtime[/\\]worker/);
  });

  it('discards what a failed event emitted before it threw', async () => {
    const result = await runCode(t.runtime, ACCOUNT, source('this.$emit({ early: true }); throw new Error("after emit");'));
    expect(result.outcomes[0]!.emits).toEqual([]);
    expect(result.outcomes[0]!.error?.message).toBe('after emit');
  });
});

describe('$.service.db', () => {
  const counter = source(
    `const before = this.db.get("count");
     this.db.set("count", (before ?? 0) + 1);
     this.db.set("last", event);
     if (event.fail) throw new Error("failed after writing");
     this.$emit({ before: before ?? null, missing: this.db.get("nothing") === undefined });`,
    'props: { db: "$.service.db" },',
  );

  it('threads writes of successful events through the batch and returns the final values', async () => {
    const result = await runCode(t.runtime, ACCOUNT, counter, {
      db: { count: 10 },
      events: [{ n: 1 }, { n: 2, fail: true }, { n: 3 }],
    });
    expect(result.outcomes.map((o) => o.emits.map((e) => e.event))).toEqual([[{ before: 10, missing: true }], [], [{ before: 11, missing: true }]]);
    expect(result.outcomes[1]!.error?.message).toBe('failed after writing');
    expect(result.dbWrites).toEqual({ count: 12, last: { n: 3 } });
  });

  it('keeps no writes of a batch whose only event failed', async () => {
    const result = await runCode(t.runtime, ACCOUNT, counter, { events: [{ fail: true }] });
    expect(result.dbWrites).toEqual({});
  });

  it('refuses values that are not JSON with a TypeError (undefined removes the key: see test/api/events.test.ts)', async () => {
    const result = await runCode(
      t.runtime,
      ACCOUNT,
      source(
        `const results = [];
         for (const value of [() => 1, 10n, (() => { const a = []; a.push(a); return a; })(), { f() {} }]) {
           try { this.db.set("k", value); results.push("stored"); } catch (e) { results.push(e.name + ": " + e.message); }
         }
         this.$emit(results);`,
        'props: { db: "$.service.db" },',
      ),
    );
    const messages = result.outcomes[0]!.emits[0]!.event as string[];
    expect(messages).toHaveLength(4);
    for (const message of messages) expect(message).toMatch(/^TypeError: the value for \$\.service\.db key "k" is not JSON-serialisable/);
    expect(result.dbWrites).toEqual({});
  });

  it('keeps any string as an ordinary key, "__proto__" included', async () => {
    const result = await runCode(
      t.runtime,
      ACCOUNT,
      source('this.db.set("__proto__", { x: 1 }); this.$emit(this.db.get("__proto__"));', 'props: { db: "$.service.db" },'),
    );
    expect(result.outcomes[0]!.emits).toEqual([{ event: { x: 1 } }]);
    expect(Object.keys(result.dbWrites)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(result.dbWrites)).toBe(Object.prototype);
  });

  it('returns copies, so changing a value without set changes nothing', async () => {
    const result = await runCode(
      t.runtime,
      ACCOUNT,
      source('const v = this.store.get("o"); v.x = 2; this.$emit(this.store.get("o"));', 'props: { store: "$.service.db" },'),
      { db: { o: { x: 1 } } },
    );
    expect(result.outcomes[0]!.emits).toEqual([{ event: { x: 1 } }]);
    expect(result.dbWrites).toEqual({});
  });
});

describe('this', () => {
  it('holds prop values, defaults, methods, timer and http props, and apps with $auth', async () => {
    const code = `
      const github = {
        type: "app", app: "github",
        propDefinitions: { repo: { type: "string", label: "Repo", default: "octo/cat" } },
        methods: {
          token() { return this.$auth.oauth_access_token; },
          url(path) { return this.base() + path; },
          base() { return "https://api.github.com"; },
        },
      };
      export default {
        name: "this", version: "1",
        props: {
          github,
          repo: { propDefinition: [github, "repo"] },
          label: "string",
          count: { type: "integer", default: 3 },
          timer: "$.interface.timer",
          http: "$.interface.http",
        },
        methods: {
          describe() { return this.label + ":" + this.count; },
        },
        async run() {
          this.$emit({
            label: this.label, count: this.count, repo: this.repo,
            described: this.describe(),
            token: this.github.token(), url: this.github.url("/user"), auth: this.github.$auth,
            timer: this.timer, endpoint: this.http.endpoint,
          });
        },
      };`;
    const result = await runCode(t.runtime, ACCOUNT, code, {
      props: { label: 'hello', timer: { intervalSeconds: 60 } },
      auths: { github: { oauth_access_token: 'tok_123' } },
      httpEndpoint: 'https://example.test/e/abc',
    });
    expect(result.outcomes[0]!.error).toBeUndefined();
    expect(result.outcomes[0]!.emits[0]!.event).toEqual({
      label: 'hello',
      count: 3,
      repo: 'octo/cat',
      described: 'hello:3',
      token: 'tok_123',
      url: 'https://api.github.com/user',
      auth: { oauth_access_token: 'tok_123' },
      timer: { type: '$.interface.timer', intervalSeconds: 60 },
      endpoint: 'https://example.test/e/abc',
    });
  });

  it('gives an app prop an empty $auth when none is configured, and works with spread base objects', async () => {
    const code = `
      const app = { type: "app", app: "demo", methods: { who() { return Object.keys(this.$auth).length; } } };
      const common = { props: { app }, methods: { greet() { return "hi " + this.app.who(); } } };
      module.exports = {
        ...common,
        name: "spread", version: "1",
        methods: { ...common.methods, twice() { return this.greet() + "!"; } },
        async run() { this.$emit(this.twice()); },
      };`;
    const result = await runCode(t.runtime, ACCOUNT, code);
    expect(result.outcomes[0]!.emits).toEqual([{ event: 'hi 0!' }]);
  });
});

describe('respond()', () => {
  const responder = (body: string, customResponse = true) =>
    `module.exports = { name: "http", version: "1", props: { http: { type: "$.interface.http", customResponse: ${customResponse} } }, async run(event) { ${body} } };`;

  it('sends the first valid response at once and ignores a second with a warning', async () => {
    const responded: Array<[HttpResponse, number]> = [];
    const prepared = await t.runtime.prepare(
      responder(`
        this.http.respond({ status: 202, headers: { "x-one": 1 }, body: { ok: true } });
        this.http.respond({ status: 500, body: "second" });
        this.$emit("done");`),
    );
    const result = await t.runtime.invoke(request(ACCOUNT, prepared, { customResponse: true, events: [{}] }), {
      onRespond(response, index) {
        responded.push([response, index]);
      },
    });
    const expected = { status: 202, headers: { 'x-one': '1', 'content-type': 'application/json' }, body: '{"ok":true}' };
    expect(responded).toEqual([[expected, 0]]);
    expect(result.outcomes[0]!.response).toEqual(expected);
    expect(result.outcomes[0]!.emits).toEqual([{ event: 'done' }]);
    expect(result.outcomes[0]!.logs).toEqual([expect.objectContaining({ k: 'warn', msg: expect.stringContaining('more than once') })]);
  });

  it('sends the response before the run ends', async () => {
    const responded: HttpResponse[] = [];
    const prepared = await t.runtime.prepare(responder('this.http.respond({ status: 204 }); await new Promise(() => {});'));
    const result = await t.runtime.invoke(request(ACCOUNT, prepared, { customResponse: true, timeoutMs: 2_000 }), {
      onRespond: (response) => responded.push(response),
    });
    expect(responded).toEqual([{ status: 204, headers: {}, body: null }]);
    expect(result.outcomes[0]!.error).toMatchObject({ name: 'TimeoutError', message: 'run timed out after 2000 ms' });
    expect(result.outcomes[0]!.response).toEqual({ status: 204, headers: {}, body: null });
  });

  it('passes a Buffer body through as a Buffer', async () => {
    const prepared = await t.runtime.prepare(responder('this.http.respond({ status: 200, body: Buffer.from([1, 2, 3]) });'));
    const result = await t.runtime.invoke(request(ACCOUNT, prepared, { customResponse: true }));
    const body = result.outcomes[0]!.response!.body;
    expect(Buffer.isBuffer(body)).toBe(true);
    expect([...(body as Buffer)]).toEqual([1, 2, 3]);
  });

  it('fails the run on an invalid status, even if the component catches the error', async () => {
    for (const status of [99, 600, 200.5, 'abc', ' 200', '200.0', '0200', '99', '600', '2e2', undefined]) {
      const prepared = await t.runtime.prepare(
        responder(`try { this.http.respond({ status: ${JSON.stringify(status) ?? 'undefined'} }); } catch {} this.$emit("after");`),
      );
      const result = await t.runtime.invoke(request(ACCOUNT, prepared, { customResponse: true }));
      expect(result.outcomes[0]!.error?.message).toMatch(/status that is an integer from 100 to 599/);
      expect(result.outcomes[0]!.emits).toEqual([]);
      expect(result.outcomes[0]!.response).toBeUndefined();
    }
  });

  it('quotes a header name and a status in its errors, cut to their first 100 characters', async () => {
    const cases: Array<[string, string]> = [
      [
        '{ status: 200, headers: { ["bad name " + "x".repeat(10000)]: "v" } }',
        `respond(): "bad name ${'x'.repeat(91)}"… (10009 characters) is not a valid header name`,
      ],
      ['{ status: 200, headers: { ["x".repeat(10000)]: {} } }', `respond(): header "${'x'.repeat(100)}"… (10000 characters) must be a string`],
      ['{ status: 200, headers: { ["x".repeat(10000)]: "a\\nb" } }', `respond(): header "${'x'.repeat(100)}"… (10000 characters) contains a line break`],
      ['{ status: 200, headers: { "x-a\\"b": "v" } }', 'respond(): "x-a\\"b" is not a valid header name'],
      ['{ status: "9".repeat(10000) }', `respond() needs a status that is an integer from 100 to 599, not "${'9'.repeat(100)}"… (10000 characters)`],
    ];
    for (const [response, message] of cases) {
      const prepared = await t.runtime.prepare(responder(`this.http.respond(${response});`));
      const result = await t.runtime.invoke(request(ACCOUNT, prepared, { customResponse: true }));
      expect(result.outcomes[0]!.error?.message).toBe(message);
      expect(result.outcomes[0]!.response).toBeUndefined();
    }
  });

  it('reads a status written as three digits in a string ("200", as the registry\'s HTTP sources pass it) as that integer', async () => {
    const prepared = await t.runtime.prepare(responder('this.http.respond({ status: "201", body: "made" });'));
    const result = await t.runtime.invoke(request(ACCOUNT, prepared, { customResponse: true }));
    expect(result.outcomes[0]!.error).toBeUndefined();
    expect(result.outcomes[0]!.response).toMatchObject({ status: 201, body: 'made' });
  });

  it('ignores respond() with a warning when customResponse is off', async () => {
    let called = false;
    const prepared = await t.runtime.prepare(responder('this.http.respond({ status: 200 }); this.$emit(1);', false));
    const result = await t.runtime.invoke(request(ACCOUNT, prepared, { customResponse: false }), {
      onRespond() {
        called = true;
      },
    });
    expect(called).toBe(false);
    expect(result.outcomes[0]!.response).toBeUndefined();
    expect(result.outcomes[0]!.emits).toEqual([{ event: 1 }]);
    expect(result.outcomes[0]!.logs[0]).toMatchObject({ k: 'warn', msg: expect.stringContaining('customResponse') });
  });

  it('is not usable in hooks', async () => {
    const prepared = await t.runtime.prepare(
      'module.exports = { name: "h", version: "1", props: { http: { type: "$.interface.http", customResponse: true } }, hooks: { activate() { this.http.respond({ status: 200 }); } }, run() {} };',
    );
    const result = await t.runtime.invoke(request(ACCOUNT, prepared, { method: 'activate', events: undefined, customResponse: true }));
    expect(result.outcomes[0]!.error).toBeUndefined();
    expect(result.outcomes[0]!.response).toBeUndefined();
    expect(result.outcomes[0]!.logs[0]).toMatchObject({ k: 'warn', msg: expect.stringContaining('only usable in run') });
  });
});

describe('hooks and logs', () => {
  const code = `
    module.exports = {
      name: "hooks", version: "1",
      props: { db: "$.service.db" },
      hooks: {
        async deploy() { console.log("deploying %s", "now", { n: 1 }); this.db.set("deployed", true); this.$emit({ from: "deploy" }); },
        async activate() { console.info("active"); console.warn("careful"); console.error("oops"); console.debug("details"); },
      },
      async run(event) { console.log("event", event); },
    };`;

  it('runs the named hook without an event, with db and $emit', async () => {
    const prepared = await t.runtime.prepare(code);
    const result = await t.runtime.invoke(request(ACCOUNT, prepared, { method: 'deploy', events: undefined }));
    expect(result.outcomes).toHaveLength(1);
    expect(result.outcomes[0]!.emits).toEqual([{ event: { from: 'deploy' } }]);
    expect(result.outcomes[0]!.logs).toEqual([{ k: 'log', ts: expect.any(Number), msg: 'deploying now { n: 1 }' }]);
    expect(result.dbWrites).toEqual({ deployed: true });
  });

  it('captures each console level as a log line', async () => {
    const prepared = await t.runtime.prepare(code);
    const result = await t.runtime.invoke(request(ACCOUNT, prepared, { method: 'activate' }));
    expect(result.outcomes[0]!.logs.map((l) => [l.k, l.msg])).toEqual([
      ['info', 'active'],
      ['warn', 'careful'],
      ['error', 'oops'],
      ['debug', 'details'],
    ]);
  });

  it('treats a missing hook as a call that does nothing', async () => {
    const prepared = await t.runtime.prepare(code);
    const result = await t.runtime.invoke(request(ACCOUNT, prepared, { method: 'deactivate' }));
    expect(result.outcomes).toEqual([{ emits: [], logs: [], durationMs: expect.any(Number) }]);
  });

  it('fails every event with the reason when the component no longer loads', async () => {
    const prepared = await t.runtime.prepare('throw new Error("gone bad");');
    const result = await t.runtime.invoke(request(ACCOUNT, prepared, { events: [1, 2] }));
    expect(result.outcomes.map((o) => o.error)).toEqual(
      [1, 2].map(() =>
        expect.objectContaining({
          name: 'ComponentLoadError',
          code: 'load_failed',
          message: expect.stringContaining('gone bad'),
        }),
      ),
    );
  });

  it('returns no outcomes for a run without events', async () => {
    const prepared = await t.runtime.prepare(code);
    expect(await t.runtime.invoke(request(ACCOUNT, prepared, { events: [] }))).toEqual({ outcomes: [], dbWrites: {}, cpuMs: 0 });
  });
});
