// Workflows: define, change and delete them; runs from HTTP, manual runs, replays, sources, errors and timers; each
// step committed with its return value, exports and logs; emitted and `$errors` events as the specification shows them.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client, request } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';
import { workflowCalls } from '../helpers/workflows.js';
import { emitterSource } from '../helpers/components.js';
import { openStream } from '../delivery/helpers.js';

const WORKFLOW_KEYS = ['active', 'created_at', 'id', 'name', 'steps', 'timeout_seconds', 'trigger', 'updated_at'];

/** A code step as users write it in the reference service. */
const PARSE_STEP = `
export default defineComponent({
  async run({ steps, $ }) {
    console.log("parsing", steps.trigger.event.body.n);
    $.export("$summary", "parsed");
    $.export("doubled", steps.trigger.event.body.n * 2);
    return { n: steps.trigger.event.body.n };
  },
});
`;

/** An action with props, the second step reads the first through a template. */
const ADD_ACTION = `
export default {
  key: "test-add",
  name: "Add",
  version: "0.1.0",
  type: "action",
  props: { a: { type: "integer" }, b: { type: "integer", default: 1 }, label: { type: "string", optional: true } },
  async run({ steps, $ }) {
    $.send.emit({ raw_event: { sum: this.a + this.b, label: this.label ?? null } });
    return this.a + this.b;
  },
};
`;

const FAILING_STEP = `module.exports = { async run({ steps }) { throw new TypeError("bad input: " + JSON.stringify(steps.trigger.event.body)); } };`;

const EXIT_STEP = `module.exports = { async run({ $ }) { $.export("before", 1); $.flow.exit("nothing to do"); $.export("after", 2); } };`;

const RESPOND_STEP = `module.exports = { async run({ steps, $ }) { await $.respond({ status: 201, headers: { "x-step": "respond" }, body: { echoed: steps.trigger.event.body } }); return "answered"; } };`;

const COUNT_STEP = `module.exports = { props: { db: "$.service.db" }, async run({ $ }) { const n = (this.db.get("n") || 0) + 1; this.db.set("n", n); return n; } };`;

const DELAY_STEP = `module.exports = { async run({ $ }) { $.flow.delay(300); return "waited"; } };`;

const ECHO_STEP = `module.exports = { async run({ steps }) { return steps.trigger.event; } };`;

describe.each(DIALECTS)('workflows on %s', (dialect) => {
  let server: TestServer;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    server = await startTestServer(dialect, { minTimerInterval: 1 });
    api = client(server.url, (await server.createUser()).apiKey);
  });
  afterAll(() => server?.destroy());

  const { create, finishedRuns } = workflowCalls(() => api);

  it('creates an HTTP workflow whose steps read each other through templates, and runs it on each request', async () => {
    const workflow = await create({
      name: 'double and add',
      trigger: { type: 'http', custom_response: false },
      steps: [
        { name: 'parse', component_code: PARSE_STEP },
        { name: 'add', component_code: ADD_ACTION, configured_props: { a: '{{ steps.parse.$return_value.n }}', label: 'x{{steps.parse.doubled}}' } },
      ],
    });
    expect(Object.keys(workflow).sort()).toEqual(WORKFLOW_KEYS);
    expect(workflow.id).toMatch(/^p_[0-9a-z]{26}$/);
    expect(workflow).toMatchObject({ name: 'double and add', active: true, timeout_seconds: 30 });
    expect(workflow.trigger).toEqual({
      type: 'http',
      custom_response: false,
      endpoint_url: expect.stringMatching(new RegExp(`^${server.url}/e/en[0-9a-f]{40}$`)),
    });
    expect(workflow.steps.map((s: any) => s.name)).toEqual(['parse', 'add']);
    expect(workflow.steps[1].configured_props).toEqual({ a: '{{ steps.parse.$return_value.n }}', b: 1, label: 'x{{steps.parse.doubled}}' });

    const hit = await request('POST', workflow.trigger.endpoint_url, { body: { n: 20 } });
    expect(hit.status).toBe(200);
    expect(hit.body).toEqual({ success: true });

    const [run] = await finishedRuns(workflow.id, 1);
    expect(run).toMatchObject({ workflow_id: workflow.id, status: 'succeeded', trigger: 'http' });
    expect(run.id).toMatch(/^wr_/);
    expect(run.event).toMatchObject({ method: 'POST', path: '/', body: { n: 20 } });
    expect(run.steps.map((s: any) => [s.name, s.status])).toEqual([
      ['parse', 'succeeded'],
      ['add', 'succeeded'],
    ]);
    expect(run.steps[0].$return_value).toEqual({ n: 20 });
    expect(run.steps[0].exports).toEqual({ $summary: 'parsed', doubled: 40 });
    expect(run.steps[0].logs.map((l: any) => l.msg)).toEqual(['parsing 20']);
    expect(run.steps[1].$return_value).toBe(21);

    const events = await api.get(`/v1/workflows/${workflow.id}/event_summaries?expand=event`);
    expect(events.status).toBe(200);
    expect(events.body.data).toHaveLength(1);
    expect(events.body.data[0].event).toEqual({ raw_event: { sum: 21, label: 'x40' } });
    expect(events.body.data[0].metadata).toMatchObject({ emitter_id: workflow.id, name: '' });

    const one = await api.get(`/v1/workflows/${workflow.id}/runs/${run.id}`);
    expect(one.status).toBe(200);
    expect(one.body.data).toEqual(run);
  });

  // The exports a step made before it threw say how far it got; they were dropped with the rest of its outcome.
  it("keeps a failed step's exports in the run, and none of its sends or return value", async () => {
    const partial = `module.exports = { async run({ $ }) {
      $.export("fetched", 3); $.export("$summary", "fetched 3");
      $.send.emit({ raw_event: { never: true } });
      throw new Error("the third page failed");
    } };`;
    const workflow = await create({ name: 'half-done', steps: [{ name: 'fetch', component_code: partial }] });
    expect((await api.post(`/v1/workflows/${workflow.id}/run`, { body: {} })).status).toBe(202);
    const [run] = await finishedRuns(workflow.id, 1);
    expect(run.status).toBe('failed');
    expect(run.steps).toHaveLength(1);
    expect(run.steps[0]).toMatchObject({ name: 'fetch', status: 'failed', exports: { fetched: 3, $summary: 'fetched 3' } });
    expect(run.steps[0].error).toMatchObject({ name: 'Error', message: 'the third page failed' });
    expect(run.steps[0].$return_value).toBeUndefined();
    const events = await api.get(`/v1/workflows/${workflow.id}/event_summaries`);
    expect(events.body.data).toEqual([]);
  });

  it('fails a run at the step that throws, skips the rest, and reports it on $errors with the specification fields', async () => {
    const workflow = await create({
      name: 'fails',
      steps: [
        { name: 'first', component_code: ECHO_STEP },
        { name: 'boom', component_code: FAILING_STEP },
        { name: 'never', component_code: ECHO_STEP },
      ],
    });
    const started = await api.post(`/v1/workflows/${workflow.id}/run`, { body: { x: 1 } });
    expect(started.status).toBe(202);
    expect(started.body.data).toMatchObject({ status: 'queued', trigger: 'manual', event: { body: { x: 1 } }, steps: [] });
    const [run] = await finishedRuns(workflow.id, 1);
    expect(run.status).toBe('failed');
    expect(run.steps.map((s: any) => [s.name, s.status])).toEqual([
      ['first', 'succeeded'],
      ['boom', 'failed'],
    ]);
    expect(run.steps[1].error).toMatchObject({ name: 'TypeError', message: 'bad input: {"x":1}' });
    expect(run.error).toMatchObject({ name: 'TypeError', step: 'boom' });

    const errors = await api.get(`/v1/workflows/${workflow.id}/$errors/event_summaries?expand=event`);
    expect(errors.status).toBe(200);
    const [item] = errors.body.data;
    expect(item.metadata.name).toBe('$errors');
    expect(item.event.original_event).toEqual({ body: { x: 1 } });
    expect(Object.keys(item.event.original_context).sort()).toEqual(
      ['deployment_id', 'id', 'owner_id', 'platform_version', 'source_type', 'ts', 'verified', 'workflow_id'].sort(),
    );
    expect(item.event.original_context).toMatchObject({
      id: run.id,
      workflow_id: workflow.id,
      deployment_id: `d_${workflow.id.slice(2)}`,
      source_type: 'MANUAL',
      verified: false,
    });
    expect(item.event.original_context.ts).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(item.event.error).toMatchObject({ code: 'TypeError', cellId: 'boom', name: 'TypeError', message: 'bad input: {"x":1}' });
    expect(item.event.error.stack).toContain('bad input');
    expect(item.event.error.ts).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect((await api.get(`/v1/workflows/${workflow.id}/event_summaries`)).body.data).toEqual([]);
  });

  it('ends a run at $.flow.exit, keeping the exports made before it', async () => {
    const workflow = await create({
      name: 'exits',
      steps: [
        { name: 'stop', component_code: EXIT_STEP },
        { name: 'never', component_code: ECHO_STEP },
      ],
    });
    await api.post(`/v1/workflows/${workflow.id}/run`, {});
    const [run] = await finishedRuns(workflow.id, 1);
    expect(run).toMatchObject({ status: 'succeeded', exit_reason: 'nothing to do' });
    expect(run.steps).toHaveLength(1);
    expect(run.steps[0].exports).toEqual({ before: 1 });
  });

  it('answers the HTTP request with $.respond when custom_response is set', async () => {
    const workflow = await create({
      name: 'responds',
      trigger: { type: 'http', custom_response: true },
      steps: [{ name: 'reply', component_code: RESPOND_STEP }],
    });
    const res = await request('POST', `${workflow.trigger.endpoint_url}/hook`, { body: { hello: 'world' } });
    expect(res.status).toBe(201);
    expect(res.headers.get('x-step')).toBe('respond');
    expect(res.body).toEqual({ echoed: { hello: 'world' } });
  });

  it("warns on a later step's $.respond() after an earlier step answered, as on a second call within one step", async () => {
    // The later call was dropped without a word: the run view showed nothing of why its answer never arrived.
    const workflow = await create({
      name: 'answers twice',
      trigger: { type: 'http', custom_response: true },
      steps: [
        { name: 'reply', component_code: RESPOND_STEP },
        { name: 'again', component_code: 'module.exports = { async run({ $ }) { await $.respond({ status: 500, body: "late" }); } };' },
      ],
    });
    const res = await request('POST', workflow.trigger.endpoint_url, { body: { hello: 'world' } });
    expect([res.status, res.body]).toEqual([201, { echoed: { hello: 'world' } }]);
    const [run] = await finishedRuns(workflow.id, 1);
    expect(run.steps.map((s: any) => [s.name, s.status])).toEqual([
      ['reply', 'succeeded'],
      ['again', 'succeeded'],
    ]);
    expect(run.steps[0].logs).toEqual([]);
    expect(run.steps[1].logs).toEqual([
      {
        k: 'warn',
        ts: expect.any(Number),
        msg: '$.respond() was called in step "again", but an earlier step had answered; only the first response was sent',
      },
    ]);
  });

  it('answers 504 with a JSON body when no step responds', async () => {
    const workflow = await create({ name: 'silent', trigger: { type: 'http', custom_response: true }, steps: [{ name: 'quiet', component_code: ECHO_STEP }] });
    const res = await request('GET', workflow.trigger.endpoint_url);
    expect(res.status).toBe(504);
    expect(res.body).toEqual({ error: 'the workflow did not respond: no step called $.respond()', code: 'no_response' });
    const errors = await waitFor(
      () => api.get(`/v1/workflows/${workflow.id}/$errors/event_summaries?expand=event`),
      (r) => r.body.data.length === 1,
      { what: 'the $errors entry of the unanswered run' },
    );
    expect(errors.body.data[0].event.error).toMatchObject({
      name: 'NoResponseError',
      code: 'no_response',
      cellId: 'quiet',
      message: 'the run ended without any step calling $.respond(); the HTTP client got 504 no_response',
    });
  });

  it('says a custom-response run gave no answer because a step called $.flow.exit() first, to its client and on $errors', async () => {
    // Both said "no step called $.respond()", as if the run had forgotten to answer, though a step ended it on purpose.
    const cases: Array<[string, string]> = [
      [EXIT_STEP, 'step "stop" called $.flow.exit("nothing to do")'],
      ['module.exports = { async run({ $ }) { $.flow.exit(); } };', 'step "stop" called $.flow.exit()'],
      // A long reason is quoted by its first 100 characters: it may be megabytes, and came back whole to the client.
      [
        'module.exports = { async run({ $ }) { $.flow.exit("r".repeat(300000)); } };',
        `step "stop" called $.flow.exit("${'r'.repeat(100)}"… (300000 characters))`,
      ],
    ];
    for (const [code, said] of cases) {
      const workflow = await create({
        name: 'exits before responding',
        trigger: { type: 'http', custom_response: true },
        steps: [
          { name: 'stop', component_code: code },
          { name: 'reply', component_code: RESPOND_STEP },
        ],
      });
      const res = await request('POST', workflow.trigger.endpoint_url, { body: { n: 1 } });
      expect([res.status, res.body]).toEqual([504, { error: `the workflow did not respond: ${said} before any step called $.respond()`, code: 'no_response' }]);
      const errors = await waitFor(
        () => api.get(`/v1/workflows/${workflow.id}/$errors/event_summaries?expand=event`),
        (r) => r.body.data.length === 1,
        { what: 'the $errors entry of the run that exited' },
      );
      expect(errors.body.data[0].event.error).toMatchObject({
        name: 'NoResponseError',
        code: 'no_response',
        cellId: 'stop',
        message: `the run ended without any step calling $.respond(): ${said}; the HTTP client got 504 no_response`,
      });
      const [run] = await finishedRuns(workflow.id, 1);
      expect([run.status, run.steps.length]).toEqual(['succeeded', 1]);
    }
  });

  it("says why a custom-response run gave no answer: a run that timed out, and one delayed past the client's wait, at once", async () => {
    // Both were answered "no step called $.respond()", though one step was cut off and the other responds later.
    const hangs = await create({
      name: 'hangs before responding',
      timeout_seconds: 1,
      trigger: { type: 'http', custom_response: true },
      steps: [{ name: 'hang', component_code: 'module.exports = { async run() { await new Promise(() => {}); } };' }],
    });
    const timedOut = await request('POST', hangs.trigger.endpoint_url, { body: {} });
    expect(timedOut.status).toBe(504);
    expect(timedOut.body).toEqual({ error: expect.stringMatching(/^the workflow timed out before responding: .*timed out/), code: 'no_response' });

    const delays = await create({
      name: 'delays before responding',
      timeout_seconds: 1,
      trigger: { type: 'http', custom_response: true },
      steps: [
        { name: 'wait', component_code: 'module.exports = { async run({ $ }) { $.flow.delay(3600000); } };' },
        { name: 'reply', component_code: RESPOND_STEP },
      ],
    });
    const delayed = await request('POST', delays.trigger.endpoint_url, { body: {} });
    const [run] = (await api.get(`/v1/workflows/${delays.id}/runs`)).body.data;
    expect(run.status).toBe('delayed');
    expect(delayed.status).toBe(504);
    // Told as the delay began (not after 6 s of waiting, which could not bring an answer an hour away).
    expect(delayed.body).toEqual({
      error: `the workflow went into $.flow.delay for 3600 s before any step called $.respond(), past the 6 s a request waits (its timeout_seconds and 5 s); run ${run.id} goes on then, and a later $.respond() reaches no one`,
      code: 'no_response',
    });

    // A delay that ends while the client still waits is waited out: the step after it answers.
    const brief = await create({
      name: 'responds after a brief delay',
      timeout_seconds: 1,
      trigger: { type: 'http', custom_response: true },
      steps: [
        { name: 'wait', component_code: 'module.exports = { async run({ $ }) { $.flow.delay(1000); } };' },
        { name: 'reply', component_code: RESPOND_STEP },
      ],
    });
    const answered = await request('POST', brief.trigger.endpoint_url, { body: { n: 1 } });
    expect([answered.status, answered.body]).toEqual([201, { echoed: { n: 1 } }]);
  });

  it('answers a client waiting on a delayed run at once when its workflow is deleted, saying so', async () => {
    // A delay shorter than the client's wait (timeout_seconds 30 and 5 s): the client waits on.
    const delays = await create({
      name: 'deleted while delayed',
      trigger: { type: 'http', custom_response: true },
      steps: [
        { name: 'wait', component_code: 'module.exports = { async run({ $ }) { $.flow.delay(25000); } };' },
        { name: 'reply', component_code: RESPOND_STEP },
      ],
    });
    const waiting = request('POST', delays.trigger.endpoint_url, { body: {} });
    const delayed = await waitFor(
      () => api.get(`/v1/workflows/${delays.id}/runs?status=delayed`),
      (res) => res.body.data.length === 1,
      { what: 'the run delayed' },
    );
    expect((await api.delete(`/v1/workflows/${delays.id}`)).status).toBe(204);
    // It waited out timeout_seconds + 5 s (35 s), then heard that the deleted run "goes on".
    const answer = await waiting;
    expect([answer.status, answer.body]).toEqual([
      504,
      { error: `the workflow was deleted before responding; run ${delayed.body.data[0].id} was deleted with it`, code: 'no_response' },
    ]);
  }, 20_000);

  it('answers a client waiting on a run at once when its workflow stops answering with $.respond(), saying so', async () => {
    const flips = await create({
      name: 'custom response switched off',
      trigger: { type: 'http', custom_response: true },
      steps: [
        { name: 'wait', component_code: 'module.exports = { async run({ $ }) { $.flow.delay(25000); } };' },
        { name: 'reply', component_code: RESPOND_STEP },
      ],
    });
    const waiting = request('POST', flips.trigger.endpoint_url, { body: {} });
    const delayed = await waitFor(
      () => api.get(`/v1/workflows/${flips.id}/runs?status=delayed`),
      (res) => res.body.data.length === 1,
      { what: 'the run delayed' },
    );
    // A change that keeps custom_response leaves the client waiting: the answer below is the switch's.
    expect((await api.put(`/v1/workflows/${flips.id}`, { name: 'still answering' })).status).toBe(200);
    expect((await api.put(`/v1/workflows/${flips.id}`, { trigger: { type: 'http', custom_response: false } })).status).toBe(200);
    // It was told, once the run ended, "no step called $.respond()", though the step after the delay called it.
    const answer = await waiting;
    expect([answer.status, answer.body]).toEqual([
      504,
      {
        error: `the workflow was changed before responding: its trigger is no longer {"type":"http","custom_response":true}, so its steps' $.respond() answers no request; run ${delayed.body.data[0].id} goes on`,
        code: 'no_response',
      },
    ]);
    expect((await api.get(`/v1/workflows/${flips.id}/runs/${delayed.body.data[0].id}`)).body.data.status).toBe('delayed');
  }, 20_000);

  it("keeps each step's $.service.db across runs, and replays a run with its original event", async () => {
    const workflow = await create({ name: 'counts', steps: [{ name: 'count', component_code: COUNT_STEP }] });
    const first = await api.post(`/v1/workflows/${workflow.id}/run`, { a: 1 });
    await finishedRuns(workflow.id, 1);
    const replay = await api.post(`/v1/workflows/${workflow.id}/runs/${first.body.data.id}/replay`);
    expect(replay.status).toBe(202);
    expect(replay.body.data).toMatchObject({ trigger: 'replay', replay_of: first.body.data.id, event: { a: 1 } });
    const runs = await finishedRuns(workflow.id, 2);
    expect(runs.map((r) => r.steps[0].$return_value)).toEqual([2, 1]);
    // Switched off, it runs nothing: a replay is refused like a manual run.
    expect((await api.put(`/v1/workflows/${workflow.id}`, { active: false })).status).toBe(200);
    const refused = await api.post(`/v1/workflows/${workflow.id}/runs/${first.body.data.id}/replay`);
    expect([refused.status, refused.body.code]).toEqual([409, 'conflict']);
    expect((await api.get(`/v1/workflows/${workflow.id}/runs`)).body.data).toHaveLength(2);
  });

  it("removes a step's $.service.db key set to undefined: the run succeeds and the next sees no value", async () => {
    const step = `module.exports = { props: { db: "$.service.db" }, async run({ steps }) {
      this.db.set("n", steps.trigger.event.remove ? undefined : (this.db.get("n") || 0) + 1);
      return this.db.get("n") ?? "undefined";
    } };`;
    const workflow = await create({ name: 'removes', steps: [{ name: 'count', component_code: step }] });
    for (const [i, event] of [{}, { remove: true }, {}].entries()) {
      expect((await api.post(`/v1/workflows/${workflow.id}/run`, event)).status).toBe(202);
      await finishedRuns(workflow.id, i + 1);
    }
    const runs = await finishedRuns(workflow.id, 3);
    expect(runs.map((r) => [r.status, r.steps[0].$return_value])).toEqual([
      ['succeeded', 1],
      ['succeeded', 'undefined'],
      ['succeeded', 1],
    ]);
  });

  it('resumes a delayed run after its delay', async () => {
    const workflow = await create({
      name: 'delays',
      steps: [
        { name: 'wait', component_code: DELAY_STEP },
        { name: 'after', component_code: ECHO_STEP },
      ],
    });
    await api.post(`/v1/workflows/${workflow.id}/run`, { later: true });
    const delayed = await waitFor(
      () => api.get(`/v1/workflows/${workflow.id}/runs`),
      (r) => r.body.data[0]?.status === 'delayed' || r.body.data[0]?.status === 'succeeded',
      { what: 'the run to reach its delay' },
    );
    expect(delayed.body.data[0].steps[0].$return_value).toBe('waited');
    const [run] = await finishedRuns(workflow.id, 1);
    expect(run.status).toBe('succeeded');
    expect(run.steps.map((s: any) => s.name)).toEqual(['wait', 'after']);
    expect(run.steps[1].started_at_ms - run.steps[0].started_at_ms).toBeGreaterThanOrEqual(300);
  });

  it('ends a run that waited for a step a change removed as succeeded, instead of leaving it delayed for good', async () => {
    const longDelay = `module.exports = { async run({ $ }) { $.flow.delay(1500); return "waited"; } };`;
    const workflow = await create({
      name: 'shrinks',
      steps: [
        { name: 'wait', component_code: longDelay },
        { name: 'after', component_code: ECHO_STEP },
      ],
    });
    await api.post(`/v1/workflows/${workflow.id}/run`, { early: true });
    await waitFor(
      () => api.get(`/v1/workflows/${workflow.id}/runs`),
      (r) => r.body.data[0]?.status === 'delayed',
      { what: 'the run to reach its delay' },
    );
    const changed = await api.put(`/v1/workflows/${workflow.id}`, { steps: [{ name: 'wait', component_code: longDelay }] });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    // Before, the runner dropped the run from memory at its due time but left its row delayed: every scan took it up again.
    const [run] = await finishedRuns(workflow.id, 1);
    expect(run).toMatchObject({ status: 'succeeded', steps: [{ name: 'wait', status: 'succeeded', $return_value: 'waited' }] });
    expect(run.finished_at_ms).toBeGreaterThanOrEqual(run.created_at_ms + 1500);
    // Runs queued after the change run the new steps.
    await api.post(`/v1/workflows/${workflow.id}/run`, { late: true });
    const runs = await finishedRuns(workflow.id, 2);
    expect(runs.map((r) => [r.status, r.steps.length])).toEqual([
      ['succeeded', 1],
      ['succeeded', 1],
    ]);
  });

  it('goes on with the steps a run has not run after a change reorders or removes steps while it waits (none twice, none skipped), saying when it resumes', async () => {
    const longDelay = `module.exports = { async run({ $ }) { $.flow.delay(1500); return "waited"; } };`;
    const named = (name: string) => ({ name, component_code: `module.exports = { async run({ steps }) { return Object.keys(steps); } };` });
    const wait = { name: 'wait', component_code: longDelay };
    const reordered = await create({ name: 'reordered mid-run', steps: [named('first'), wait, named('after')] });
    const shortened = await create({ name: 'shortened mid-run', steps: [named('first'), wait, named('after')] });
    for (const workflow of [reordered, shortened]) await api.post(`/v1/workflows/${workflow.id}/run`, { n: 1 });
    for (const workflow of [reordered, shortened]) {
      const delayed = await waitFor(
        () => api.get(`/v1/workflows/${workflow.id}/runs`),
        (r) => r.body.data[0]?.status === 'delayed',
        { what: 'the run to reach its delay' },
      );
      // A delayed run says when its next step is due: the delay counts from the commit of the step that asked for it.
      const [run] = delayed.body.data;
      expect(run.resumes_at_ms).toBeGreaterThanOrEqual(run.steps[1].started_at_ms + 1500);
      expect((await api.get(`/v1/workflows/${workflow.id}/runs/${run.id}`)).body.data.resumes_at_ms).toBe(run.resumes_at_ms);
    }
    // Both runs wait for "after", their third step. Counted by position, the reordered one ran "wait" again (its
    // third step now) and never "after"; the shortened one had no third step left and ended without "after".
    expect((await api.put(`/v1/workflows/${reordered.id}`, { steps: [named('after'), named('first'), wait] })).status).toBe(200);
    expect((await api.put(`/v1/workflows/${shortened.id}`, { steps: [wait, named('after')] })).status).toBe(200);
    const stepsOf = (run: any) => run.steps.map((s: any) => [s.name, s.status, s.$return_value]);
    const [reorderedRun] = await finishedRuns(reordered.id, 1);
    const [shortenedRun] = await finishedRuns(shortened.id, 1);
    for (const run of [reorderedRun, shortenedRun]) {
      expect(run.status).toBe('succeeded');
      expect(run).not.toHaveProperty('resumes_at_ms');
      expect(stepsOf(run)).toEqual([
        ['first', 'succeeded', ['trigger']],
        ['wait', 'succeeded', 'waited'],
        ['after', 'succeeded', ['trigger', 'first', 'wait']],
      ]);
    }
    // A run started after the change runs the new list in its order.
    await api.post(`/v1/workflows/${reordered.id}/run`, { n: 2 });
    expect(stepsOf((await finishedRuns(reordered.id, 2))[0])).toEqual([
      ['after', 'succeeded', ['trigger']],
      ['first', 'succeeded', ['trigger', 'after']],
      ['wait', 'succeeded', 'waited'],
    ]);
  });

  it("runs on a source's events (source trigger), and a second workflow receives the first one's errors", async () => {
    const source = await api.post('/v1/sources', { component_code: emitterSource() });
    const listening = await create({
      name: 'on source',
      trigger: { type: 'source', source_id: source.body.data.id, event_name: '' },
      steps: [
        { name: 'echo', component_code: ECHO_STEP },
        { name: 'boom', component_code: FAILING_STEP },
      ],
    });
    const handler = await create({ name: 'error handler', steps: [{ name: 'echo', component_code: ECHO_STEP }] });
    const sub = await api.post(`/v1/subscriptions?emitter_id=${listening.id}&listener_id=${handler.id}&event_name=$errors`);
    expect(sub.status).toBe(200);

    await api.post(`/v1/sources/${source.body.data.id}/run`, { ping: 1 });
    const [run] = await finishedRuns(listening.id, 1);
    expect(run).toMatchObject({ trigger: 'event', status: 'failed', event: { ping: 1 } });
    const [handled] = await finishedRuns(handler.id, 1);
    expect(handled.trigger).toBe('event');
    expect(Object.keys(handled.event).sort()).toEqual(['error', 'original_context', 'original_event']);
    expect(handled.event.original_event).toEqual({ ping: 1 });
    expect(handled.event.error).toMatchObject({ name: 'TypeError', cellId: 'boom' });

    // The source deleted, its subscription goes with it; a later change of the workflow does not bring it back.
    const subscribed = async () =>
      (await api.get('/v1/users/me/subscriptions')).body.data.filter((s: { listener_id: string }) => s.listener_id === listening.id);
    expect(await subscribed()).toHaveLength(1);
    expect((await api.delete(`/v1/sources/${source.body.data.id}`)).status).toBe(204);
    expect(await subscribed()).toEqual([]);
    expect((await api.put(`/v1/workflows/${listening.id}`, { name: 'on a deleted source' })).status).toBe(200);
    expect(await subscribed()).toEqual([]);
  });

  it('runs on a timer trigger', async () => {
    const workflow = await create({ name: 'ticks', trigger: { type: 'timer', interval_seconds: 1 }, steps: [{ name: 'echo', component_code: ECHO_STEP }] });
    expect(workflow.trigger).toEqual({ type: 'timer', interval_seconds: 1 });
    const [run] = await finishedRuns(workflow.id, 1);
    expect(run.trigger).toBe('timer');
    expect(run.event).toMatchObject({ interval_seconds: 1, cron: null });
    // Deactivated, it stops: its timer row goes.
    const off = await api.put(`/v1/workflows/${workflow.id}`, { active: false });
    expect(off.status).toBe(200);
    expect(off.body.data.active).toBe(false);
    const timers = await server.running.services.store.db.selectFrom('timers').selectAll().where('source_id', '=', workflow.id).execute();
    expect(timers).toEqual([]);
  });

  it('starts timer runs while an earlier one waits out a $.flow.delay, as it holds no worker', async () => {
    // A delayed run counted as one still going: an hourly timer whose step delayed a day ran once a day.
    const workflow = await create({
      name: 'ticks and waits',
      trigger: { type: 'timer', interval_seconds: 1 },
      steps: [
        { name: 'wait', component_code: 'module.exports = { async run({ $ }) { $.flow.delay(3600000); } };' },
        { name: 'after', component_code: ECHO_STEP },
      ],
    });
    const runs = await waitFor(
      () => api.get(`/v1/workflows/${workflow.id}/runs?status=delayed`),
      (r) => r.body.data.length >= 2,
      { what: 'two delayed timer runs' },
    );
    const stamps = runs.body.data.map((run: any) => run.event.timestamp);
    expect(new Set(stamps).size).toBe(stamps.length);
    expect((await api.delete(`/v1/workflows/${workflow.id}`)).status).toBe(204);
  });

  it('pages runs of large exports within a bounded size, its cursors reaching each run once, both ways', async () => {
    // 100 runs of 8 MB steps made one page longer than a response can be: a 500. Pages now stop at 16 MiB of runs.
    const workflow = await create({
      name: 'large exports',
      steps: [{ name: 'big', component_code: `module.exports = { async run({ $ }) { $.export("big", "x".repeat(7 * 1024 * 1024)); } };` }],
    });
    for (let i = 0; i < 4; i++) expect((await api.post(`/v1/workflows/${workflow.id}/run`, { i })).status).toBe(202);
    await waitFor(
      () => api.get(`/v1/workflows/${workflow.id}/runs?status=succeeded&limit=1`),
      (r) => r.body.page_info.total_count === 4,
      // Each run writes 7 MB, committed a run or two at a time: slow on a loaded machine.
      { timeoutMs: 45_000, what: 'four finished runs' },
    );
    const first = await api.get(`/v1/workflows/${workflow.id}/runs?limit=10`);
    expect(first.status).toBe(200);
    expect(first.body.page_info).toMatchObject({ total_count: 4, count: 2 });
    expect(first.body.data.map((r: any) => r.event.i)).toEqual([3, 2]);
    expect(first.body.data[0].steps[0].exports.big).toHaveLength(7 * 1024 * 1024);
    const rest = await api.get(`/v1/workflows/${workflow.id}/runs?limit=10&after=${first.body.page_info.end_cursor}`);
    expect(rest.body.data.map((r: any) => r.event.i)).toEqual([1, 0]);
    expect((await api.get(`/v1/workflows/${workflow.id}/runs?limit=10&after=${rest.body.page_info.end_cursor}`)).body.data).toEqual([]);
    // Paging back keeps the runs next to the cursor: of the three newer than the oldest, the two nearest it.
    const back = await api.get(`/v1/workflows/${workflow.id}/runs?limit=10&before=${rest.body.page_info.end_cursor}&status=succeeded`);
    expect(back.body.page_info).toMatchObject({ total_count: 4, count: 2, end_cursor: rest.body.page_info.start_cursor });
    expect(back.body.data.map((r: any) => r.event.i)).toEqual([2, 1]);
  });

  it('lists, changes and deletes workflows; another account sees none of them', async () => {
    const workflow = await create({ name: 'crud', trigger: { type: 'http', custom_response: false }, steps: [{ name: 'echo', component_code: ECHO_STEP }] });
    const list = await api.get('/v1/users/me/workflows?limit=100');
    expect(list.status).toBe(200);
    expect(list.body.data.map((w: any) => w.id)).toContain(workflow.id);
    expect(list.body.page_info.total_count).toBe(list.body.data.length);

    const renamed = await api.put(`/v1/workflows/${workflow.id}`, { name: 'renamed' });
    expect(renamed.body.data).toMatchObject({ name: 'renamed', trigger: workflow.trigger });
    expect(renamed.body.data.steps).toEqual(workflow.steps);

    const other = client(server.url, (await server.createUser()).apiKey);
    for (const [method, path] of [
      ['GET', `/v1/workflows/${workflow.id}`],
      ['PUT', `/v1/workflows/${workflow.id}`],
      ['DELETE', `/v1/workflows/${workflow.id}`],
      ['POST', `/v1/workflows/${workflow.id}/run`],
      ['GET', `/v1/workflows/${workflow.id}/runs`],
      ['GET', `/v1/workflows/${workflow.id}/event_summaries`],
    ] as const) {
      const answer =
        method === 'GET'
          ? await other.get(path)
          : method === 'DELETE'
            ? await other.delete(path)
            : method === 'PUT'
              ? await other.put(path, { name: 'x' })
              : await other.post(path, {});
      expect(answer.status, `${method} ${path}`).toBe(404);
      expect(answer.body.code).toBe('not_found');
    }

    const deleted = await api.delete(`/v1/workflows/${workflow.id}`);
    expect(deleted.status).toBe(204);
    expect((await api.get(`/v1/workflows/${workflow.id}`)).status).toBe(404);
    const hit = await request('POST', workflow.trigger.endpoint_url, { body: {} });
    expect(hit.status).toBe(404);
  });

  it('keeps its endpoint for life: switched to a timer it answers 404, switched back to HTTP the same URL runs it', async () => {
    const workflow = await create({ name: 'stable endpoint', trigger: { type: 'http' }, steps: [{ name: 'echo', component_code: ECHO_STEP }] });
    const url = workflow.trigger.endpoint_url;
    expect((await request('POST', url, { body: { n: 1 } })).status).toBe(200);

    const timer = await api.put(`/v1/workflows/${workflow.id}`, { trigger: { type: 'timer', interval_seconds: 3600 } });
    expect(timer.status, JSON.stringify(timer.body)).toBe(200);
    expect(timer.body.data.trigger).toEqual({ type: 'timer', interval_seconds: 3600 });
    const meanwhile = await request('POST', url, { body: { n: 2 } });
    expect([meanwhile.status, meanwhile.body.code]).toEqual([404, 'not_found']);

    const none = await api.put(`/v1/workflows/${workflow.id}`, { trigger: null });
    expect(none.status, JSON.stringify(none.body)).toBe(200);
    const back = await api.put(`/v1/workflows/${workflow.id}`, { trigger: { type: 'http', custom_response: false } });
    expect(back.status, JSON.stringify(back.body)).toBe(200);
    expect(back.body.data.trigger).toEqual({ type: 'http', custom_response: false, endpoint_url: url });
    expect((await request('POST', url, { body: { n: 3 } })).status).toBe(200);
    const runs = await finishedRuns(workflow.id, 2);
    expect(runs.filter((run: any) => run.trigger === 'http').map((run: any) => run.event.body.n)).toEqual([3, 1]);
  });

  it('refuses bad definitions with a precise 4xx and stores nothing', async () => {
    const before = (await api.get('/v1/users/me/workflows?limit=100')).body.page_info.total_count;
    const hooked = `module.exports = { name: "s", version: "1", hooks: { async deploy() {} }, async run() {} };`;
    const savedSource = (await api.post('/v1/components', { component_code: emitterSource() })).body.data.id;
    const cases: Array<[object, number, string, RegExp]> = [
      [{ name: 'x' }, 400, 'invalid_request', /steps is required/],
      [{ name: 'x', steps: [] }, 400, 'invalid_request', /steps/],
      [
        {
          name: 'x',
          steps: [
            { name: 'a', component_code: ECHO_STEP },
            { name: 'a', component_code: ECHO_STEP },
          ],
        },
        400,
        'invalid_request',
        /used by an earlier step/,
      ],
      [{ name: 'x', steps: [{ name: 'trigger', component_code: ECHO_STEP }] }, 400, 'invalid_request', /may not be "trigger"/],
      // Saved, then a key that set the prototype of `steps`: later steps and templates read `{}` or nothing for it.
      [{ name: 'x', steps: [{ name: '__proto__', component_code: ECHO_STEP }] }, 400, 'invalid_request', /^steps\[0\]\.name may not be "__proto__"/],
      [
        { name: 'x', steps: [{ name: 'a' }] },
        400,
        'invalid_request',
        /^steps\[0\] \("a"\): give exactly one of component_code, component_id or component_key$/,
      ],
      [{ name: 'x', steps: [{ name: 'a', component_id: savedSource }] }, 422, 'component_invalid', /is a source; a step is an action or a code step/],
      [{ name: 'x', steps: [{ name: 'a', component_code: hooked }] }, 422, 'component_invalid', /hooks are for sources/],
      // Taken, and its timer never fired.
      [
        {
          name: 'x',
          steps: [
            {
              name: 'a',
              component_code:
                'export default defineComponent({ props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 60 } } }, async run() {} })',
            },
          ],
        },
        422,
        'component_invalid',
        /^steps\[0\] \("a"\): action .* declares "timer" \(\$\.interface\.timer\); interface props are for sources/,
      ],
      [{ name: 'x', steps: [{ name: 'a', component_code: 'module.exports = { nope: 1 };' }] }, 422, 'component_invalid', /run/],
      [
        { name: 'x', steps: [{ name: 'a', component_code: ADD_ACTION, configured_props: { a: '{{ process.exit() }}' } }] },
        400,
        'invalid_request',
        /^steps\[0\] \("a"\): configured_props\.a: "\{\{ process\.exit\(\) \}\}" is not a path/,
      ],
      [
        { name: 'x', steps: [{ name: 'a', component_code: ADD_ACTION, configured_props: { a: 'three' } }] },
        422,
        'props_invalid',
        /^steps\[0\] \("a"\): invalid configured_props: a /,
      ],
      [
        { name: 'x', trigger: { type: 'timer', interval_seconds: 0 }, steps: [{ name: 'a', component_code: ECHO_STEP }] },
        400,
        'invalid_request',
        /interval_seconds/,
      ],
      [
        {
          name: 'x',
          trigger: { type: 'source', source_id: 'dc_00000000000000000000000000', event_name: '' },
          steps: [{ name: 'a', component_code: ECHO_STEP }],
        },
        404,
        'not_found',
        /source/,
      ],
      // A workflow is no source: "source p_… not found" sent its author looking for a deleted one.
      [
        { name: 'x', trigger: { type: 'source', source_id: 'p_00000000000000000000000000' }, steps: [{ name: 'a', component_code: ECHO_STEP }] },
        400,
        'invalid_request',
        /^trigger\.source_id names a source \(dc_…\), not a workflow; to run on workflow "p_00000000000000000000000000"'s events, make no trigger and subscribe: POST \/v1\/subscriptions\?emitter_id=p_00000000000000000000000000&listener_id=<this workflow>$/,
      ],
      [{ name: 'x', trigger: { type: 'ftp' }, steps: [{ name: 'a', component_code: ECHO_STEP }] }, 400, 'invalid_request', /trigger/],
      // A misspelt field was taken silently: 200, and the default kept.
      [
        { name: 'x', timout_seconds: 60, steps: [{ name: 'a', component_code: ECHO_STEP }] },
        400,
        'invalid_request',
        /must not have the field "timout_seconds"/,
      ],
      // A step's unknown component is named with its step.
      [
        {
          name: 'x',
          steps: [
            { name: 'a', component_code: ECHO_STEP },
            { name: 'add', component_id: 'sc_00000000000000000000000000' },
          ],
        },
        404,
        'not_found',
        /^steps\[1\] \("add"\): component "sc_00000000000000000000000000" not found$/,
      ],
      [{ name: 'x', steps: [{ name: 'a', component_key: 'no-such-action' }] }, 404, 'not_found', /^steps\[0\] \("a"\): .*no-such-action/],
      // A blank id or key was looked up as an unknown one (404).
      [{ name: 'x', steps: [{ name: 'a', component_id: '' }] }, 400, 'invalid_request', /^steps\[0\] \("a"\): component_id is empty$/],
      [{ name: 'x', steps: [{ name: 'a', component_key: ' ' }] }, 400, 'invalid_request', /^steps\[0\] \("a"\): component_key is empty$/],
      // An empty code step was refused without saying which of the steps it was.
      [
        {
          name: 'x',
          steps: [
            { name: 'a', component_code: ECHO_STEP },
            { name: 'b', component_code: '  ' },
          ],
        },
        400,
        'invalid_request',
        /^steps\[1\] \("b"\): component_code is empty$/,
      ],
      // The timer check said `intervalSeconds`, a name the workflow API does not have.
      [
        { name: 'x', trigger: { type: 'timer', interval_seconds: 1e20 }, steps: [{ name: 'a', component_code: ECHO_STEP }] },
        400,
        'invalid_request',
        /^invalid timer trigger: interval_seconds must be at most 31536000 \(365 days\)/,
      ],
      // Taken, and due in 3 · 10^7 years: a due time past what a number holds exactly.
      [
        { name: 'x', trigger: { type: 'timer', interval_seconds: 1e15 }, steps: [{ name: 'a', component_code: ECHO_STEP }] },
        400,
        'invalid_request',
        /^invalid timer trigger: interval_seconds must be at most 31536000 \(365 days\), got 1000000000000000$/,
      ],
    ];
    for (const [body, status, code, message] of cases) {
      const res = await api.post('/v1/workflows', body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body.code, JSON.stringify(res.body)).toBe(code);
      expect(res.body.error).toMatch(message);
    }
    expect((await api.get('/v1/users/me/workflows?limit=100')).body.page_info.total_count).toBe(before);
    const kept = await create({ name: 'kept on a typo', steps: [{ name: 'a', component_code: ECHO_STEP }] });
    const typo = await api.put(`/v1/workflows/${kept.id}`, { actve: false });
    expect([typo.status, typo.body.details]).toEqual([400, [{ in: 'body', field: 'actve', message: 'must not have the field "actve"' }]]);
    // An update names a step at fault as a create does.
    const badProp = await api.put(`/v1/workflows/${kept.id}`, {
      steps: [
        { name: 'a', component_code: ECHO_STEP },
        { name: 'add', component_code: ADD_ACTION, configured_props: { a: 'three' } },
      ],
    });
    expect([badProp.status, badProp.body.code]).toEqual([422, 'props_invalid']);
    expect(badProp.body.error).toMatch(/^steps\[1\] \("add"\): invalid configured_props: a /);
    const missing = await api.put(`/v1/workflows/${kept.id}`, { steps: [{ name: 'gone', component_id: 'sc_00000000000000000000000000' }] });
    expect([missing.status, missing.body.error]).toEqual([404, 'steps[0] ("gone"): component "sc_00000000000000000000000000" not found']);
    expect((await api.get(`/v1/workflows/${kept.id}`)).body.data).toEqual(kept);
    expect((await api.get('/v1/workflows/p_00000000000000000000000000')).status).toBe(404);
    expect((await api.get('/v1/workflows/not-an-id/runs')).status).toBe(404);
  });

  it('refuses a template that reads no step before its own, on create and update, and stores nothing', async () => {
    const own = client(server.url, (await server.createUser()).apiKey);
    const withTemplate = (label: unknown) => ({
      name: 'templates',
      steps: [
        { name: 'parse', component_code: PARSE_STEP },
        { name: 'add', component_code: ADD_ACTION, configured_props: { a: 1, label } },
        { name: 'last', component_code: ECHO_STEP },
      ],
    });
    const refusal = (expression: string, at = 'label') => ({
      error: `steps[1] ("add"): configured_props.${at}: ${JSON.stringify(`{{ ${expression} }}`)} reads no step before this one; a template reads one of steps.trigger, steps.parse`,
      code: 'invalid_request',
    });
    // Each was saved and then evaluated to nothing on every run: the step got undefined (or "") without a word.
    const cases: Array<[unknown, string, string?]> = [
      ['{{ steps.prase.$return_value.n }}', 'steps.prase.$return_value.n'],
      ['{{ steps.last.$return_value }}', 'steps.last.$return_value'],
      ['{{ steps.add.doubled }}', 'steps.add.doubled'],
      ['n = {{ steps.parse.doubled }} {{ process.env.KEY }}', 'process.env.KEY'],
      // A nested one is named where it stands, not by its prop alone.
      [{ nested: ['ok', '{{ steps["gone"].x }}'] }, 'steps["gone"].x', 'label.nested[1]'],
      [{ 'a key': { b: '{{ steps.gone }}' } }, 'steps.gone', 'label["a key"].b'],
    ];
    for (const [label, expression, at] of cases) {
      const res = await own.post('/v1/workflows', withTemplate(label));
      expect([res.status, res.body], JSON.stringify(label)).toEqual([400, refusal(expression, at)]);
    }
    // A template that is not a path is refused inside an array or object as at the top: nested, it was saved, and
    // each run's step got the template's own text, braces and all.
    for (const [label, at] of [
      ['{{ steps.parse.n + 1 }}', 'label'],
      [{ deep: ['{{ steps.parse.n + 1 }}'] }, 'label.deep[0]'],
    ] as const) {
      const res = await own.post('/v1/workflows', withTemplate(label));
      expect([res.status, res.body], JSON.stringify(label)).toEqual([
        400,
        {
          error: `steps[1] ("add"): configured_props.${at}: "{{ steps.parse.n + 1 }}" is not a path such as steps.trigger.event.body`,
          code: 'invalid_request',
        },
      ]);
    }
    expect((await own.get('/v1/users/me/workflows')).body.page_info.total_count).toBe(0);

    const kept = (await own.post('/v1/workflows', withTemplate('{{ steps.parse.doubled }} of {{ steps.trigger.event.n }} {{ steps["parse"] }}'))).body.data;
    expect(kept.steps[1].configured_props.label).toBe('{{ steps.parse.doubled }} of {{ steps.trigger.event.n }} {{ steps["parse"] }}');
    const changed = await own.put(`/v1/workflows/${kept.id}`, { steps: withTemplate('{{ steps.prase.doubled }}').steps });
    expect([changed.status, changed.body]).toEqual([400, refusal('steps.prase.doubled')]);
    expect((await own.get(`/v1/workflows/${kept.id}`)).body.data).toEqual(kept);
  });

  it("holds a source trigger's event_name to a subscription's 200 characters, creating and changing nothing past it", async () => {
    const own = client(server.url, (await server.createUser()).apiKey);
    const source = (await own.post('/v1/sources', { component_code: `module.exports = { name: "s", version: "1", async run() {} };` })).body.data;
    const refused = {
      error: 'invalid body: trigger.event_name must NOT have more than 200 characters',
      code: 'invalid_request',
      details: [{ in: 'body', field: 'trigger.event_name', message: 'must NOT have more than 200 characters' }],
    };
    const long = { type: 'source', source_id: source.id, event_name: 'é'.repeat(201) };
    const created = await own.post('/v1/workflows', { name: 'long channel', trigger: long, steps: [{ name: 'a', component_code: ECHO_STEP }] });
    expect([created.status, created.body]).toEqual([400, refused]);
    expect((await own.get('/v1/users/me/workflows')).body.page_info.total_count).toBe(0);
    const kept = (await own.post('/v1/workflows', { name: 'short channel', steps: [{ name: 'a', component_code: ECHO_STEP }] })).body.data;
    const changed = await own.put(`/v1/workflows/${kept.id}`, { trigger: long });
    expect([changed.status, changed.body]).toEqual([400, refused]);
    expect((await own.get(`/v1/workflows/${kept.id}`)).body.data).toEqual(kept);
    expect((await own.get('/v1/users/me/subscriptions')).body).toEqual({ data: [] });
    // 200 code points, as a subscription takes, is a trigger too.
    const fits = await own.put(`/v1/workflows/${kept.id}`, { trigger: { ...long, event_name: 'é'.repeat(200) } });
    expect([fits.status, fits.body.data.trigger]).toEqual([200, { ...long, event_name: 'é'.repeat(200) }]);
  });

  it('takes back what it returns: a GET body sent to PUT changes nothing, whatever the trigger', async () => {
    const source = (await api.post('/v1/sources', { component_code: `module.exports = { name: "s", version: "1", async run() {} };` })).body.data;
    const triggers = [
      { type: 'http', custom_response: true },
      { type: 'timer', interval_seconds: 3600 },
      { type: 'timer', cron: '0 9 * * 1-5', timezone: 'Europe/Paris' },
      { type: 'source', source_id: source.id, event_name: 'orders' },
      null,
    ];
    for (const trigger of triggers) {
      const workflow = await create({ name: `round trip ${trigger?.type}`, trigger, steps: [{ name: 'a', component_code: ECHO_STEP }], timeout_seconds: 45 });
      // Set back, so that a write in this same second would show.
      await server.running.services.store.db.updateTable('workflows').set({ updated_at: 1_000_000_000 }).where('id', '=', workflow.id).execute();
      const shown = (await api.get(`/v1/workflows/${workflow.id}`)).body.data;
      const res = await api.put(`/v1/workflows/${workflow.id}`, shown);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data.updated_at).toBe(1_000_000_000);
      expect((await api.get(`/v1/workflows/${workflow.id}`)).body.data).toEqual(shown);
      // A change moves it.
      const renamed = await api.put(`/v1/workflows/${workflow.id}`, { name: `${shown.name} 2` });
      expect(renamed.body.data.updated_at).toBeGreaterThan(1_000_000_000);
    }
  });

  it('keeps both of two concurrent changes of different fields, and sets up nothing for a workflow a delete took', async () => {
    // On PostgreSQL these requests interleave: each PUT wrote back the fields it had read (one change was lost), and a
    // PUT that a DELETE beat answered 200 and left a timer row behind for the deleted workflow.
    const db = server.running.services.store.db;
    for (let i = 0; i < 20; i++) {
      const workflow = await create({ name: 'race', steps: [{ name: 'a', component_code: ECHO_STEP }] });
      const changes = await Promise.all([
        api.put(`/v1/workflows/${workflow.id}`, { name: `renamed ${i}` }),
        api.put(`/v1/workflows/${workflow.id}`, { timeout_seconds: 77 }),
      ]);
      expect(changes.map((c) => c.status)).toEqual([200, 200]);
      expect((await api.get(`/v1/workflows/${workflow.id}`)).body.data).toMatchObject({ name: `renamed ${i}`, timeout_seconds: 77 });
      const [changed, deleted, again] = await Promise.all([
        api.put(`/v1/workflows/${workflow.id}`, { trigger: { type: 'timer', interval_seconds: 3600 } }),
        api.delete(`/v1/workflows/${workflow.id}`),
        api.delete(`/v1/workflows/${workflow.id}`),
      ]);
      expect([deleted.status, again.status].sort()).toEqual([204, 404]);
      expect([200, 404]).toContain(changed.status);
      if (changed.status === 404) expect(changed.body).toEqual({ error: `workflow "${workflow.id}" not found`, code: 'not_found' });
      const timers = await db.selectFrom('timers').select('source_id').where('source_id', '=', workflow.id).execute();
      expect(timers).toEqual([]);
    }
  });

  it('deletes a workflow while runs of it are asked for, queued and committed: 204, and each run 202 or 404, never 500', async () => {
    // On PostgreSQL the delete could cross a group commit of the workflow's runs and die as a deadlock's victim (500),
    // and a run inserted after the delete committed failed its foreign key: a 500, for every run inserted with it.
    for (let i = 0; i < 20; i++) {
      const workflow = await create({ name: 'gone', trigger: { type: 'http' }, steps: [{ name: 'a', component_code: ECHO_STEP }] });
      const first = await api.post(`/v1/workflows/${workflow.id}/run`, { n: i });
      expect(first.status).toBe(202);
      const [deleted, run, replay, endpoint] = await Promise.all([
        api.delete(`/v1/workflows/${workflow.id}`),
        api.post(`/v1/workflows/${workflow.id}/run`, { n: i }),
        api.post(`/v1/workflows/${workflow.id}/runs/${first.body.data.id}/replay`),
        request('POST', workflow.trigger.endpoint_url, { body: { n: i } }),
      ]);
      expect(deleted.status, deleted.text).toBe(204);
      expect((await api.get(`/v1/workflows/${workflow.id}`)).status).toBe(404);
      for (const [answer, ok] of [
        [run, 202],
        [replay, 202],
        [endpoint, 200],
      ] as const) {
        expect([ok, 404], answer.text).toContain(answer.status);
        if (answer.status === 404) expect(answer.body.code).toBe('not_found');
      }
    }
  });

  it('keeps no subscription of a source trigger whose source a delete removed at the same time', async () => {
    // On PostgreSQL the trigger's subscription was made after the source's delete had removed its subscriptions: a row
    // listening to no source, held against the account's subscription limit for good.
    const db = server.running.services.store.db;
    const source = `module.exports = { name: "s", version: "1", async run() {} };`;
    for (let i = 0; i < 15; i++) {
      const emitter = (await api.post('/v1/sources', { component_code: source })).body.data;
      const workflow = await create({ name: 'listener', steps: [{ name: 'a', component_code: ECHO_STEP }] });
      const trigger = { type: 'source', source_id: emitter.id };
      const [changed, created, deleted] = await Promise.all([
        api.put(`/v1/workflows/${workflow.id}`, { trigger }),
        api.post('/v1/workflows', { name: 'listener 2', trigger, steps: [{ name: 'a', component_code: ECHO_STEP }] }),
        api.delete(`/v1/sources/${emitter.id}`),
      ]);
      expect(deleted.status).toBe(204);
      expect([200, 404]).toContain(changed.status);
      expect([200, 404]).toContain(created.status);
      const left = await db.selectFrom('subscriptions').select('id').where('emitter_id', '=', emitter.id).execute();
      expect(left).toEqual([]);
    }
  });

  it('changes and creates workflows and subscriptions on one source in parallel without a deadlock', async () => {
    // On PostgreSQL a create locked the account (to count it) and then the trigger's source, while a PUT or a
    // subscription locked the source and then the account: each waited for the other, and one answered 500.
    const source = `module.exports = { name: "s", version: "1", async run() {} };`;
    for (let i = 0; i < 12; i++) {
      const emitter = (await api.post('/v1/sources', { component_code: source })).body.data;
      const workflow = await create({ name: 'listener', steps: [{ name: 'a', component_code: ECHO_STEP }] });
      const other = await create({ name: 'other', steps: [{ name: 'a', component_code: ECHO_STEP }] });
      const trigger = { type: 'source', source_id: emitter.id };
      const answers = await Promise.all([
        api.put(`/v1/workflows/${workflow.id}`, { trigger }),
        api.post('/v1/workflows', { name: 'listener 2', trigger, steps: [{ name: 'a', component_code: ECHO_STEP }] }),
        api.post(`/v1/subscriptions?emitter_id=${emitter.id}&listener_id=${other.id}`),
        api.post('/v1/workflows', { name: 'listener 3', trigger, steps: [{ name: 'a', component_code: ECHO_STEP }] }),
      ]);
      expect(answers.map((res) => [res.status, res.body.code])).toEqual([
        [200, undefined],
        [200, undefined],
        [200, undefined],
        [200, undefined],
      ]);
    }
  });

  it('saves the code of no step when a later step is refused, on create and on update', async () => {
    const components = async () => (await api.get('/v1/users/me/components?limit=100')).body.page_info.total_count;
    const workflow = await create({ name: 'kept', steps: [{ name: 'a', component_code: ECHO_STEP }] });
    const before = { components: await components(), workflow: (await api.get(`/v1/workflows/${workflow.id}`)).body.data };
    const refusedSteps = [
      { name: 'a', component_code: ECHO_STEP },
      { name: 'b', component_code: ADD_ACTION, configured_props: { a: 'three' } },
    ];
    const created = await api.post('/v1/workflows', { name: 'x', steps: refusedSteps });
    expect([created.status, created.body.code]).toEqual([422, 'props_invalid']);
    const updated = await api.put(`/v1/workflows/${workflow.id}`, { name: 'renamed', steps: refusedSteps });
    expect([updated.status, updated.body.code]).toEqual([422, 'props_invalid']);
    const broken = await api.put(`/v1/workflows/${workflow.id}`, {
      name: 'renamed',
      steps: [
        { name: 'a', component_code: ECHO_STEP },
        { name: 'b', component_code: 'module.exports = { async run() {' },
      ],
    });
    expect([broken.status, broken.body.code]).toEqual([422, 'component_invalid']);
    expect(await components()).toBe(before.components);
    expect((await api.get(`/v1/workflows/${workflow.id}`)).body.data).toEqual(before.workflow);
    // Accepted, the steps' code is saved with the workflow.
    const good = await api.put(`/v1/workflows/${workflow.id}`, {
      steps: [
        { name: 'a', component_code: ECHO_STEP },
        { name: 'b', component_code: ADD_ACTION, configured_props: { a: 2 } },
      ],
    });
    expect(good.status, JSON.stringify(good.body)).toBe(200);
    expect(await components()).toBe(before.components + 2);
    const ids = good.body.data.steps.map((step: { component_id: string }) => step.component_id);
    for (const id of ids) expect((await api.get(`/v1/components/${id}`)).status).toBe(200);
  });
});

describe('workflow live streams ($.send.sse)', () => {
  let server: TestServer;
  let key: string;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    key = (await server.createUser()).apiKey;
    api = client(server.url, key);
  });
  afterAll(() => server?.destroy());

  it('streams $.send.sse payloads of one channel, and replays them after a Last-Event-ID', async () => {
    const code = `module.exports = { async run({ steps, $ }) {
      $.send.sse({ channel: "updates", payload: { n: steps.trigger.event.n } });
      $.send.sse({ channel: "other", payload: { skip: true } });
    } };`;
    const res = await api.post('/v1/workflows', { name: 'live', steps: [{ name: 'push', component_code: code }] });
    const workflowId = res.body.data.id;
    const stream = openStream(`${server.url}/v1/workflows/${workflowId}/sse?channel=updates`, key);
    await stream.opened;
    await api.post(`/v1/workflows/${workflowId}/run`, { n: 1 });
    await api.post(`/v1/workflows/${workflowId}/run`, { n: 2 });
    await waitFor(
      async () => stream.data(),
      (items) => items.length >= 2,
      { what: 'two sse payloads' },
    );
    stream.source.close();
    const items = stream.data();
    expect(items.map((i: any) => i.event)).toEqual([{ n: 1 }, { n: 2 }]);
    expect(items.map((i: any) => i.metadata.name)).toEqual(['$sse:updates', '$sse:updates']);
    expect(items[0].metadata.emitter_id).toBe(workflowId);

    const again = openStream(`${server.url}/v1/workflows/${workflowId}/sse?channel=updates`, key, { 'last-event-id': items[0].id });
    await waitFor(
      async () => again.data(),
      (replayed) => replayed.length >= 1,
      { what: 'the replay' },
    );
    again.source.close();
    expect(again.data().map((i: any) => i.event)).toEqual([{ n: 2 }]);
    // Not emits: the workflow's event summaries stay empty.
    expect((await api.get(`/v1/workflows/${workflowId}/event_summaries`)).body.data).toEqual([]);
    const other = client(server.url, (await server.createUser()).apiKey);
    expect((await other.get(`/v1/workflows/${workflowId}/sse`)).status).toBe(404);
  });

  it('ends the streams of a deleted workflow', async () => {
    const code = 'module.exports = { async run({ $ }) { $.send.sse({ channel: "c", payload: {} }); } };';
    const workflowId = (await api.post('/v1/workflows', { name: 'ending', steps: [{ name: 'push', component_code: code }] })).body.data.id;
    const stream = openStream(`${server.url}/v1/workflows/${workflowId}/sse`, key);
    try {
      await stream.opened;
      expect(server.running.services.sse.clientCount(workflowId)).toBe(1);
      expect((await api.delete(`/v1/workflows/${workflowId}`)).status).toBe(204);
      await waitFor(
        async () => server.running.services.sse.clientCount(workflowId),
        (n) => n === 0,
        { what: 'the stream to end' },
      );
    } finally {
      stream.source.close();
    }
  });
});

describe('the log of custom-response workflows', () => {
  // Each failing request of user code was an error line, `request failed` with the server's stack, for operators to chase.
  it('logs a run that failed or never responded at info, with its code, not as a server error', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
    const server = await startTestServer('sqlite', {}, { logger });
    try {
      const api = client(server.url, (await server.createUser()).apiKey);
      const { create } = workflowCalls(() => api);
      const failing = await create({
        name: 'fails',
        trigger: { type: 'http', custom_response: true },
        steps: [{ name: 'boom', component_code: FAILING_STEP }],
      });
      const silent = await create({ name: 'silent', trigger: { type: 'http', custom_response: true }, steps: [{ name: 'quiet', component_code: ECHO_STEP }] });
      expect((await request('POST', failing.trigger.endpoint_url, { body: { n: 1 } })).status).toBe(500);
      expect((await request('POST', silent.trigger.endpoint_url, { body: { n: 1 } })).status).toBe(504);
      const said = lines.filter((line) => line.code === 'run_failed' || line.code === 'no_response');
      expect(said.map(({ level, code }) => ({ level, code }))).toEqual([
        { level: 30, code: 'run_failed' },
        { level: 30, code: 'no_response' },
      ]);
      expect(lines.filter((line) => (line.level as number) >= 50)).toEqual([]);
    } finally {
      await server.destroy();
    }
  });
});
