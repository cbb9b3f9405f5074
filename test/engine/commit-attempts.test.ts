// Results the database keeps failing to store, for a reason that is not an outage: the runs fail after five attempts
// instead of running again every second for ever, and the source's next runs go on.
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account } from '../helpers/account.js';
import { emitterSource } from '../helpers/components.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { workflowCalls } from '../helpers/workflows.js';

/** A trigger that fails the insert of any event whose JSON holds `"poison"` outside `$errors`: a bug's stand-in. */
async function failPoisonedEvents(server: TestServer, dialect: string): Promise<void> {
  const db = server.running.services.store.db;
  if (dialect === 'sqlite') {
    await sql`create trigger poison before insert on events when new.stream <> '$errors' and new.event like '%"poison"%'
      begin select raise(abort, 'poisoned event'); end`.execute(db);
    return;
  }
  await sql`create function poison() returns trigger language plpgsql as $$
      begin if new.stream <> '$errors' and new.event like '%"poison"%' then raise exception 'poisoned event'; end if; return new; end $$`.execute(db);
  await sql`create trigger poison before insert on events for each row execute function poison()`.execute(db);
}

describe.each(DIALECTS)('a commit that keeps failing (%s)', (dialect) => {
  let server: TestServer;
  const lines: Array<{ msg: string; level: number }> = [];

  beforeAll(async () => {
    const collect = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    server = await startTestServer(dialect, {}, { logger: pino({ level: 'warn' }, collect) });
    await failPoisonedEvents(server, dialect);
  });
  afterAll(async () => {
    await server?.destroy();
  });

  it("fails a source's runs after five attempts with ResultsNotStoredError, keeps nothing of them, and runs the next", async () => {
    const a = await account(server);
    const id = await a.deploy(emitterSource());
    await a.runAndWait(id, { poison: true });
    const [error] = await a.eventsOf(id, 1, '/$errors');
    expect(error.event.error).toMatchObject({ name: 'ResultsNotStoredError' });
    expect(error.event.error.message).toMatch(/^the database failed 5 times to store what the run produced \(.*poisoned event.*\); nothing of it was kept$/);
    expect(error.event.original_event).toEqual({ poison: true });
    const retried = lines.filter((l) => l.msg === 'could not commit a batch; its invocations will be retried');
    expect(retried).toHaveLength(4);
    expect(lines.filter((l) => l.msg === "the database failed 5 times to store the batch's results; its runs fail")).toHaveLength(1);
    // Its db write was dropped with it: the next run counts itself as the first.
    await a.runAndWait(id, { emits: [{ event: { ok: true } }] });
    expect((await a.eventsOf(id, 1)).map((e) => e.event)).toEqual([{ ok: true }]);
    const [log] = await a.eventsOf(id, 1, '/$logs');
    expect(log.event.msg).toBe('run 1');
  });

  it("fails a workflow step's runs after five attempts, and runs the next", async () => {
    const a = await account(server);
    const { create, finishedRuns } = workflowCalls(() => a.api);
    const code = 'export default defineComponent({ async run({ steps, $ }) { $.send.emit({ raw_event: steps.trigger.event }); } });';
    const workflow = await create({ name: 'poisoned', steps: [{ name: 'emit', component_code: code }] });
    await a.api.post(`/v1/workflows/${workflow.id}/run`, { poison: true });
    const [failed] = await finishedRuns(workflow.id, 1);
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatchObject({ name: 'ResultsNotStoredError' });
    await a.api.post(`/v1/workflows/${workflow.id}/run`, { ok: true });
    const [next] = await finishedRuns(workflow.id, 2);
    expect(next.status).toBe('succeeded');
  });
});
