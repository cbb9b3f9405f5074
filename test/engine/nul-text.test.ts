// Text with NUL characters: PostgreSQL's text holds none, so what a run produces is stored the same on both databases,
// and results the database refuses anyway fail their runs once instead of holding the source's queue for ever.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { account } from '../helpers/account.js';
import { workflowCalls } from '../helpers/workflows.js';

const step = (run: string) =>
  `export default defineComponent({ props: { store: { type: "data_store" } }, async run({ steps, $ }) { if (steps.trigger.event.ok) return "ok"; ${run} } });`;

const source = (run: string) =>
  `module.exports = { name: "nul", version: "1", props: { db: "$.service.db" }, async run(event) { if (event.body && event.body.ok) { this.$emit({ ok: true }); return; } ${run} } };`;

/**
 * Code that edits the first result of its worker's next report after the worker's checks: JSON.stringify calls any
 * `toJSON` on Object.prototype (as hostile.test.ts does), so NUL reaches the server, whose database refuses it.
 */
const rewriteReport = (edit: string) =>
  `Object.defineProperty(Object.prototype, "toJSON", { configurable: true, writable: true, value: function () {
    const value = this;
    if (value.t === "outcomes" && value.results.length) { delete Object.prototype.toJSON; const result = value.results[0]; ${edit} }
    return value;
  } });`;

describe.each(DIALECTS)('NUL characters in what a run produces (%s)', (dialect) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(dialect);
  });
  afterAll(async () => {
    await server?.destroy();
  });

  it('stores log lines, summaries and channel names with U+FFFD in place of NUL', async () => {
    const a = await account(server);
    const id = await a.deploy(source('console.log("a\\u0000b"); this.$emit({ n: 1 }, { summary: "s\\u0000t", name: "c\\u0000d" });'));
    await a.runAndWait(id, { body: {} });
    const [log] = await a.eventsOf(id, 1, '/$logs');
    expect(log.metadata.summary).toBe('a\uFFFDb');
    expect(log.event.msg).toBe('a\u0000b');
    const [emitted] = await a.eventsOf(id, 1);
    expect(emitted.metadata).toMatchObject({ summary: 's\uFFFDt', name: 'c\uFFFDd' });
    expect(emitted.event).toEqual({ n: 1 });
  });

  it('fails a run that writes a db key holding NUL, and runs the next', async () => {
    const a = await account(server);
    const id = await a.deploy(source('this.db.set("k\\u0000", 1);'));
    await a.runAndWait(id, { body: {} });
    const [error] = await a.eventsOf(id, 1, '/$errors');
    expect(error.event.error).toMatchObject({ name: 'TypeError', message: '$.service.db keys may not contain the NUL character' });
    await a.runAndWait(id, { body: { ok: true } });
    expect((await a.eventsOf(id, 1)).map((e) => e.event)).toEqual([{ ok: true }]);
  });

  it('fails a run that writes a db key holding an unpaired surrogate, which would come back as another key', async () => {
    const a = await account(server);
    const id = await a.deploy(source('this.db.set("k\\ud800", 1);'));
    await a.runAndWait(id, { body: {} });
    const [error] = await a.eventsOf(id, 1, '/$errors');
    expect(error.event.error).toMatchObject({ name: 'TypeError', message: '$.service.db keys may not contain an unpaired UTF-16 surrogate' });
    const paired = await a.deploy(source('const seen = this.db.get("k\\ud83d\\ude00") ?? null; this.db.set("k\\ud83d\\ude00", 1); this.$emit({ seen });'));
    await a.runAndWait(paired, { body: {} });
    await a.runAndWait(paired, { body: {} });
    expect((await a.eventsOf(paired, 2)).map((e) => e.event)).toEqual([{ seen: 1 }, { seen: null }]);
  });

  it.runIf(dialect === 'postgres')('fails a batch whose results the database refuses, once, and runs the next', async () => {
    const a = await account(server);
    // The worker refuses the key as it is written, so the component edits its worker's report after the checks.
    const id = await a.deploy(source(`${rewriteReport('result.dbWrites = { "k\\u0000": 1 };')} this.db.set("k", 1);`));
    await a.runAndWait(id, { body: {} });
    const [error] = await a.eventsOf(id, 1, '/$errors');
    expect(error.event.error.name).toBe('ResultsRefusedError');
    expect(error.event.error.message).toMatch(/^the database refused to store what the run produced \(invalid byte sequence for encoding "UTF8": 0x00\)/);
    await a.runAndWait(id, { body: { ok: true } });
    expect((await a.eventsOf(id, 1)).map((e) => e.event)).toEqual([{ ok: true }]);
  });

  it("stores a workflow's exit reason with U+FFFD in place of NUL", async () => {
    const a = await account(server);
    const { create, finishedRuns } = workflowCalls(() => a.api);
    const workflow = await create({
      name: 'exits',
      steps: [{ name: 'stop', component_code: step('$.flow.exit("a\\u0000b");'), configured_props: { store: 'w' } }],
    });
    await a.api.post(`/v1/workflows/${workflow.id}/run`, {});
    const [run] = await finishedRuns(workflow.id, 1);
    expect(run).toMatchObject({ status: 'succeeded', exit_reason: 'a\uFFFDb' });
  });

  it.runIf(dialect === 'postgres')('fails a workflow step whose results the database refuses, once, and runs the next', async () => {
    const a = await account(server);
    const { create, finishedRuns } = workflowCalls(() => a.api);
    const code = step(`${rewriteReport('result.dataStores[0].writes[0].key = "k\\u0000";')} await this.store.set("k", 1);`);
    const workflow = await create({ name: 'refused', steps: [{ name: 'write', component_code: code, configured_props: { store: 'w' } }] });
    await a.api.post(`/v1/workflows/${workflow.id}/run`, {});
    const [failed] = await finishedRuns(workflow.id, 1);
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatchObject({ name: 'ResultsRefusedError' });
    await a.api.post(`/v1/workflows/${workflow.id}/run`, { ok: true });
    const [next] = await finishedRuns(workflow.id, 2);
    expect(next.status).toBe('succeeded');
  });
});
