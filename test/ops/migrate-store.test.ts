// tributary migrate-store: a data directory with sources, a secret, events, a timer, a webhook with a pending delivery, a data store
// and a workflow moves to PostgreSQL (interrupted once and resumed), and a server on PostgreSQL serves the same of everything.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { cleanupsAfterAll, killedAfterAll } from '../helpers/cleanups.js';
import { migrateStore } from '../../src/ops/migrate-store.js';
import { openStore } from '../../src/store/database.js';
import { KNOWN_MIGRATIONS, migrateTo } from '../../src/store/migrate.js';
import { openSqliteFile } from '../../src/store/sqlite-file.js';
import { BIN, createAccount, serve } from '../helpers/processes.js';
import { createTestDatabase, tempDir } from '../helpers/server.js';
import { client, request } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';
import { workflowCalls } from '../helpers/workflows.js';

const run = promisify(execFile);
const describeOnPostgres = process.env.TRIBUTARY_TEST_DATABASE_URL ? describe : describe.skip;

const SECRETIVE = `module.exports = {
  name: "Secretive",
  version: "0.0.1",
  props: { http: "$.interface.http", token: { type: "string", secret: true }, store: { type: "data_store" } },
  async run(event) {
    await this.store.set("last", event.body.n);
    this.$emit({ n: event.body.n, token_ok: this.token === "s3cret" });
  },
};`;

const TICKING = `module.exports = {
  name: "Ticking",
  version: "0.0.1",
  props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 1 } } },
  async run(event) { this.$emit({ timestamp: event.timestamp }); },
};`;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

async function stopGracefully(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

describeOnPostgres('migrate-store: SQLite → PostgreSQL', () => {
  const cleanups = cleanupsAfterAll();
  const children = killedAfterAll();

  it('moves everything; the same key, endpoint URL, events and cursors work on PostgreSQL, secrets open and the timer goes on once', async () => {
    // A webhook receiver that fails, so that the delivery stays pending (its retry is an hour away).
    let received = 0;
    const receiver = http.createServer((_req, res) => {
      received++;
      res.statusCode = 500;
      res.end();
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    cleanups(() => void receiver.close());
    const port = await freePort();
    const publicUrl = `http://127.0.0.1:${port}`;
    const common = [
      '--port',
      String(port),
      '--public-url',
      publicUrl,
      '--allow-private-network',
      '--min-timer-interval',
      '1',
      '--webhook-retry-schedule',
      '3600',
    ];

    const dataDir = tempDir();
    const key = await createAccount(['--data-dir', dataDir], 'mover');
    const sqlite = await serve(['--data-dir', dataDir, ...common]);
    children.push(sqlite.child);
    const api = client(publicUrl, key);

    const source = await api.post('/v1/sources', { component_code: SECRETIVE, name: 'secretive', configured_props: { token: 's3cret', store: 'orders' } });
    expect(source.status).toBe(200);
    const sourceId: string = source.body.data.id;
    const endpointUrl: string = source.body.data.configured_props.http.endpoint_url;
    const webhook = await api.post(`/v1/webhooks?url=${encodeURIComponent(`http://127.0.0.1:${(receiver.address() as net.AddressInfo).port}/hook`)}&name=w`);
    expect(webhook.status).toBe(200);
    expect((await api.post(`/v1/subscriptions?emitter_id=${sourceId}&listener_id=${webhook.body.data.id}`)).status).toBe(200);
    for (let n = 1; n <= 5; n++) expect((await request('POST', endpointUrl, { body: { n } })).status).toBe(200);
    const timer = await api.post('/v1/sources', { component_code: TICKING, name: 'ticking' });
    expect(timer.status).toBe(200);
    const workflow = await api.post('/v1/workflows', {
      name: 'echo',
      trigger: { type: 'http', custom_response: false },
      steps: [{ name: 'echo', component_code: 'export default defineComponent({ async run({ steps }) { return steps.trigger.event.body } })' }],
    });
    expect(workflow.status).toBe(200);

    const eventsPath = `/v1/sources/${sourceId}/event_summaries?expand=event&limit=100`;
    await waitFor(
      () => api.get(eventsPath),
      (r) => r.body.data?.length === 5,
      { what: 'five events on SQLite' },
    );
    await waitFor(
      () => Promise.resolve(received),
      (n) => n === 5,
      { what: 'five failed delivery attempts' },
    );
    await waitFor(
      () => api.get(`/v1/sources/${timer.body.data.id}/event_summaries?expand=event&limit=100`),
      (r) => r.body.data?.length >= 2,
      {
        what: 'two timer events on SQLite',
      },
    );

    await stopGracefully(sqlite.child);
    // What a server on the stopped data directory answers, to compare the PostgreSQL server's answers with.
    const again = await serve(['--data-dir', dataDir, ...common]);
    children.push(again.child);
    const snapshot = {
      events: (await api.get(eventsPath)).body,
      page: (await api.get(`/v1/sources/${sourceId}/event_summaries?limit=2`)).body,
      nextPage: undefined as unknown,
      deliveries: (await api.get(`/v1/webhooks/${webhook.body.data.id}/deliveries?limit=100`)).body,
      keys: (await api.get('/v1/data_stores/orders/keys')).body,
      workflow: (await api.get(`/v1/workflows/${workflow.body.data.id}`)).body,
      timerEvents: (await api.get(`/v1/sources/${timer.body.data.id}/event_summaries?expand=event&limit=100`)).body.data as { event: { timestamp: number } }[],
    };
    snapshot.nextPage = (await api.get(`/v1/sources/${sourceId}/event_summaries?limit=2&after=${snapshot.page.page_info.end_cursor}`)).body;
    await stopGracefully(again.child);
    expect(snapshot.deliveries.data.length).toBeGreaterThanOrEqual(5);
    expect(snapshot.keys.data.keys).toEqual(['last']);

    const database = await createTestDatabase();
    cleanups(database.drop);
    // Interrupted after three batches of two rows, then run again by the command: it finishes.
    await expect(migrateStore({ dataDir, to: database.url, force: false, batchSize: 2, stopAfterBatches: 3 })).rejects.toThrow(/stopped/);
    const moved = await run(process.execPath, [BIN, 'migrate-store', '--data-dir', dataDir, '--to', database.url, '--batch-size', '2']);
    expect(moved.stdout).toMatch(/users: 1 row, checksum [0-9a-f]{16}… verified by an earlier run/);
    expect(moved.stdout).toMatch(/events: \d+ rows, checksum [0-9a-f]{16}… copied and verified/);
    expect(moved.stdout).toContain(`--secret-key-file ${path.join(dataDir, 'secret.key')}`);
    // Done: a second run finds the target holding data and refuses, unless --force.
    const refused = await run(process.execPath, [BIN, 'migrate-store', '--data-dir', dataDir, '--to', database.url]).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(refused).toMatchObject({ code: 2 });
    expect((refused as { stderr: string }).stderr).toContain('already holds Tributary data');

    const onPostgres = await serve(['--database-url', database.url, '--data-dir', tempDir(), '--secret-key-file', path.join(dataDir, 'secret.key'), ...common]);
    children.push(onPostgres.child);
    expect((await api.get('/v1/users/me')).status).toBe(200);
    expect((await api.get(eventsPath)).body).toEqual(snapshot.events);
    expect((await api.get(`/v1/sources/${sourceId}/event_summaries?limit=2`)).body).toEqual(snapshot.page);
    expect((await api.get(`/v1/sources/${sourceId}/event_summaries?limit=2&after=${snapshot.page.page_info.end_cursor}`)).body).toEqual(snapshot.nextPage);
    expect((await api.get(`/v1/webhooks/${webhook.body.data.id}/deliveries?limit=100`)).body).toEqual(snapshot.deliveries);
    expect((await api.get('/v1/data_stores/orders/keys')).body).toEqual(snapshot.keys);
    expect((await api.get(`/v1/workflows/${workflow.body.data.id}`)).body).toEqual(snapshot.workflow);

    // The same endpoint URL ingests, and the run opens the secret sealed on SQLite.
    expect((await request('POST', endpointUrl, { body: { n: 6 } })).status).toBe(200);
    const after = await waitFor(
      () => api.get(eventsPath),
      (r) => r.body.data?.length === 6,
      { what: 'the sixth event, on PostgreSQL' },
    );
    expect(after.body.data[0].event).toEqual({ n: 6, token_ok: true });
    expect(after.body.data.slice(1)).toEqual(snapshot.events.data);
    expect(after.body.data[0].id > snapshot.events.data[0].id).toBe(true);

    // The timer goes on from its stored due time: new ticks, each due time once, none before the last on SQLite.
    const lastOnSqlite = Math.max(...snapshot.timerEvents.map((e) => e.event.timestamp));
    const ticks = await waitFor(
      () => api.get(`/v1/sources/${timer.body.data.id}/event_summaries?expand=event&limit=100`),
      (r) => r.body.data?.length >= snapshot.timerEvents.length + 2,
      { what: 'two timer events on PostgreSQL' },
    );
    const stamps = (ticks.body.data as { event: { timestamp: number } }[]).map((e) => e.event.timestamp);
    expect(new Set(stamps).size).toBe(stamps.length);
    expect(stamps.filter((s) => s > lastOnSqlite).length).toBe(stamps.length - snapshot.timerEvents.length);
  });

  it('moves a workflow run whose step took a duration with many decimals, to the last digit', async () => {
    const dataDir = tempDir();
    const key = await createAccount(['--data-dir', dataDir], 'stepper');
    const server = await serve(['--data-dir', dataDir]);
    children.push(server.child);
    const workflows = workflowCalls(() => client(server.url, key));
    const workflow = await workflows.create({
      name: 'one step',
      trigger: { type: 'http', custom_response: false },
      steps: [{ name: 'echo', component_code: 'export default defineComponent({ async run({ steps }) { return steps.trigger.event.body } })' }],
    });
    expect((await request('POST', workflow.trigger.endpoint_url, { body: { n: 1 } })).status).toBe(200);
    await workflows.finishedRuns(workflow.id, 1);
    await stopGracefully(server.child);
    // A float4 keeps about 7 digits of this; the column must keep all of them.
    const duration = 12.345678901234567;
    const sqlite = openSqliteFile(path.join(dataDir, 'tributary.db'));
    expect(sqlite.prepare('update workflow_run_steps set duration_ms = ?').run(duration).changes).toBe(1);
    sqlite.close();

    const database = await createTestDatabase();
    cleanups(database.drop);
    const moved = await run(process.execPath, [BIN, 'migrate-store', '--data-dir', dataDir, '--to', database.url]);
    expect(moved.stdout).toMatch(/workflow_run_steps: 1 row, checksum [0-9a-f]{16}… copied and verified/);
    const target = new pg.Client({ connectionString: database.url });
    await target.connect();
    cleanups(() => target.end());
    const steps = await target.query('select duration_ms from workflow_run_steps');
    expect(steps.rows).toEqual([{ duration_ms: duration }]);
  });

  it('resumed after the data directory changed (a server ran on it meanwhile), copies again from the first table that changed', async () => {
    const dataDir = tempDir();
    const key = await createAccount(['--data-dir', dataDir], 'first');
    const server = await serve(['--data-dir', dataDir]);
    children.push(server.child);
    const api = client(server.url, key);
    const quiet = 'module.exports = { name: "Quiet", version: "0.0.1", props: { http: "$.interface.http" }, async run() {} };';
    expect((await api.post('/v1/sources', { component_code: quiet, name: 'quiet' })).status).toBe(200);
    await stopGracefully(server.child);

    const database = await createTestDatabase();
    cleanups(database.drop);
    // Interrupted once users (one batch) is verified, in the first table with rows after it.
    await expect(migrateStore({ dataDir, to: database.url, force: false, batchSize: 1, stopAfterBatches: 1 })).rejects.toThrow(/stopped/);
    const watcher = new pg.Client({ connectionString: database.url });
    await watcher.connect();
    expect((await watcher.query('select table_name, row_count from tributary_store_migration where row_count > 0')).rows).toEqual([
      { table_name: 'users', row_count: '1' },
    ]);
    // migrate-store must be the target's only session.
    await watcher.end();
    // Back on SQLite meanwhile: an account made.
    await createAccount(['--data-dir', dataDir], 'meanwhile');

    const moved = await run(process.execPath, [BIN, 'migrate-store', '--data-dir', dataDir, '--to', database.url]);
    const target = new pg.Client({ connectionString: database.url });
    await target.connect();
    cleanups(() => target.end());
    expect(moved.stdout).toContain(`users changed in ${dataDir} since the interrupted run: it and the tables after it are copied again\n`);
    expect(moved.stdout).toMatch(/^users: 2 rows, checksum [0-9a-f]{16}… copied and verified$/m);
    expect((await target.query('select username from users order by username')).rows).toEqual([{ username: 'first' }, { username: 'meanwhile' }]);
    expect((await target.query('select count(*)::int as n from sources')).rows).toEqual([{ n: 1 }]);
  });

  it('stopped by Ctrl-C or SIGTERM between two batches, says what it keeps and exits 130 or 143; run again, it goes on', async () => {
    const dataDir = tempDir();
    await createAccount(['--data-dir', dataDir], 'patient');
    // Events enough that one a batch takes seconds (events has no parent: rows of one emitter id will do).
    const sqlite = openSqliteFile(path.join(dataDir, 'tributary.db'));
    const insert = sqlite.prepare(
      "insert into events (emitter_id, stream, ms, seq, name, emit_id, event, indexed_at_ms) values ('dc_ballast', 'default', ?, 0, 'default', ?, '{}', 0)",
    );
    sqlite.transaction(() => {
      for (let i = 0; i < 20_000; i++) insert.run(i, `e${i}`);
    })();
    sqlite.close();
    const database = await createTestDatabase();
    cleanups(database.drop);

    for (const [signal, code, before] of [
      ['SIGTERM', 143, 'emitter_state: 0 rows, checksum 0000000000000000… copied and verified'],
      ['SIGINT', 130, 'emitter_state: 0 rows, checksum 0000000000000000… verified by an earlier run'],
    ] as const) {
      const child = spawn(process.execPath, [BIN, 'migrate-store', '--data-dir', dataDir, '--to', database.url, '--batch-size', '1']);
      children.push(child);
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      // events, the table after emitter_state, under way.
      await waitFor(
        () => Promise.resolve(stdout),
        (out) => out.includes(`${before}\n`),
        { intervalMs: 5, what: 'the copy of events under way' },
      );
      child.kill(signal);
      expect(await exited).toBe(code);
      expect(stderr).toBe(
        `error: migrate-store was interrupted: the tables verified so far (7 of 24) stay on the target; run the same command again to copy the others (stopped by ${signal})\n`,
      );
    }
    const moved = await run(process.execPath, [BIN, 'migrate-store', '--data-dir', dataDir, '--to', database.url, '--batch-size', '5000']);
    expect(moved.stdout).toMatch(/^users: 1 row, checksum [0-9a-f]{16}… verified by an earlier run$/m);
    expect(moved.stdout).toMatch(/^events: 20000 rows, checksum [0-9a-f]{16}… copied and verified$/m);
  });

  it('refuses, even with --force, a target that a running server is connected to, and leaves its data alone', async () => {
    const dataDir = tempDir();
    await createAccount(['--data-dir', dataDir], 'source');
    const database = await createTestDatabase();
    cleanups(database.drop);
    await createAccount(['--database-url', database.url, '--data-dir', tempDir()], 'live');
    const server = await serve(['--database-url', database.url, '--data-dir', tempDir(), '--secret-key', 'live']);
    children.push(server.child);
    const observer = new pg.Client({ connectionString: database.url });
    await observer.connect();
    cleanups(() => observer.end());
    const migrate = () =>
      run(process.execPath, [BIN, 'migrate-store', '--data-dir', dataDir, '--to', database.url, '--force']).then(
        (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
        (e: { code: number; stdout: string; stderr: string }) => e,
      );
    const refused = await migrate();
    expect(refused.code).toBe(2);
    // The server's connections and this test's own.
    expect(refused.stderr).toMatch(
      /^error: the --to database has ([2-9]|[1-9]\d+) other sessions connected, a Tributary server using it perhaps: stop every server/,
    );
    expect((await observer.query('select username from users')).rows).toEqual([{ username: 'live' }]);

    await stopGracefully(server.child);
    await observer.end();
    // Once the server's sessions are gone (their backends end just after it exits), the move goes through.
    const others = new pg.Client({ connectionString: process.env.TRIBUTARY_TEST_DATABASE_URL });
    await others.connect();
    cleanups(() => others.end());
    await waitFor(
      () => others.query('select count(*)::int as n from pg_stat_activity where datname = $1', [new URL(database.url).pathname.slice(1)]),
      (r) => r.rows[0].n === 0,
      { what: "the server's sessions to end" },
    );
    const moved = await migrate();
    expect(moved.code).toBe(0);
    expect(moved.stdout).toMatch(/users: 1 row, checksum/);
  });

  it('refuses a damaged data directory on one line, naming it, before anything is written to the target', async () => {
    const dataDir = tempDir();
    await createAccount(['--data-dir', dataDir], 'damaged');
    const file = path.join(dataDir, 'tributary.db');
    // The users table's root page overwritten, as a failing disk would: SQLite's header still reads (the indexes of
    // its key and of its two unique columns now count rows the table lacks: three more findings).
    const reader = openSqliteFile(file, { readonly: true });
    const { rootpage } = reader.prepare("select rootpage from sqlite_master where name = 'users'").get() as { rootpage: number };
    const pageSize = reader.pragma('page_size', { simple: true }) as number;
    reader.close();
    const fd = fs.openSync(file, 'r+');
    fs.writeSync(fd, Buffer.alloc(pageSize, 'X'), 0, pageSize, (rootpage - 1) * pageSize);
    fs.closeSync(fd);

    const database = await createTestDatabase();
    cleanups(database.drop);
    const refused = await run(process.execPath, [BIN, 'migrate-store', '--data-dir', dataDir, '--to', database.url]).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
    );
    expect(refused).toEqual({
      code: 1,
      stderr:
        `error: the database ${file} is damaged (SQLite's quick check: Tree ${rootpage} page ${rootpage}: btreeInitPage() returns error code 11, and 3 more): ` +
        'nothing was copied; restore it from a backup (tributary restore), then run migrate-store again\n',
    });
    const target = new pg.Client({ connectionString: database.url });
    await target.connect();
    cleanups(() => target.end());
    expect((await target.query("select table_name from information_schema.tables where table_schema = 'public'")).rows).toEqual([]);
  });

  it('refuses a target it cannot reach, and one holding tables of something else, writing nothing there', async () => {
    const dataDir = tempDir();
    await createAccount(['--data-dir', dataDir], 'elsewhere');
    const refusal = (to: string) =>
      run(process.execPath, [BIN, 'migrate-store', '--data-dir', dataDir, '--to', to]).then(
        () => ({ code: 0, stderr: '' }),
        (e: { code: number; stderr: string }) => e,
      );
    const unreachable = await refusal('postgres://postgres@127.0.0.1:1/nowhere');
    expect(unreachable.code).toBe(2);
    expect(unreachable.stderr).toMatch(/^error: cannot connect to the --to database: /);

    const database = await createTestDatabase();
    cleanups(database.drop);
    const foreign = new pg.Client({ connectionString: database.url });
    await foreign.connect();
    cleanups(() => foreign.end());
    await foreign.query('create table users (name text)');
    const other = await refusal(database.url);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain("error: the --to database holds tables that are not Tributary's (users): choose an empty database");
    const tables = await foreign.query("select table_name from information_schema.tables where table_schema = 'public' order by 1");
    expect(tables.rows.map((r) => r.table_name)).toEqual(['users']);
    // Another app's Kysely migrations beside its own tables: still not Tributary's.
    await foreign.query('create table kysely_migration (name text primary key, timestamp text not null); create table orders (id int)');
    expect((await refusal(database.url)).stderr).toContain("the --to database holds tables that are not Tributary's (orders): choose an empty database");
  });

  it('without --force, refuses a target holding Tributary data before migrating either database', async () => {
    // Both a migration behind, so that a migration run on either would show.
    const older = KNOWN_MIGRATIONS.at(-2)!;
    const dataDir = tempDir();
    const sourceStore = await openStore({ dataDir, migrate: false });
    await migrateTo(sourceStore.db, 'sqlite', older);
    await sourceStore.close();
    const database = await createTestDatabase();
    cleanups(database.drop);
    const targetStore = await openStore({ dataDir: tempDir(), databaseUrl: database.url, migrate: false });
    await migrateTo(targetStore.db, 'postgres', older);
    await targetStore.close();
    const target = new pg.Client({ connectionString: database.url });
    await target.connect();
    await target.query(
      `insert into users (id, username, email, plan, api_key_hash, created_at, updated_at) values ('u1', 'there', 'there@example.test', 'paid', 'h', 1, 1)`,
    );
    const sourceFile = path.join(dataDir, 'tributary.db');
    const sourceBefore = fs.readFileSync(sourceFile);
    await target.end();

    const refused = await run(process.execPath, [BIN, 'migrate-store', '--data-dir', dataDir, '--to', database.url]).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
    );
    expect(refused).toEqual({
      code: 2,
      stderr: 'error: the target database already holds Tributary data (rows in users): pass --force to empty it first, or choose an empty database\n',
    });
    expect(fs.readFileSync(sourceFile).equals(sourceBefore)).toBe(true);
    const source = openSqliteFile(sourceFile, { readonly: true });
    expect((source.prepare('select name from kysely_migration order by name').all() as { name: string }[]).at(-1)?.name).toBe(older);
    source.close();
    const after = new pg.Client({ connectionString: database.url });
    await after.connect();
    cleanups(() => after.end());
    expect((await after.query('select name from kysely_migration order by name')).rows.at(-1)?.name).toBe(older);
    expect((await after.query('select username from users')).rows).toEqual([{ username: 'there' }]);
    expect((await after.query("select to_regclass('tributary_store_migration') as found")).rows).toEqual([{ found: null }]);
  });
});
