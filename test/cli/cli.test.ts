// The `tributary` command end to end: serve on an empty data directory, users commands, --help, SIGTERM.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { openSqliteFile, SQLITE_DRIVER_PATH } from '../../src/store/sqlite-file.js';
import { lockDataDir } from '../../src/store/data-dir-lock.js';
import { describe, expect, it } from 'vitest';
import { killedAfterAll } from '../helpers/cleanups.js';
import { SETTINGS, envName } from '../../src/config.js';
import { hashApiKey } from '../../src/services/users.js';
import { tempDir } from '../helpers/server.js';
import { request } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';
import { createTestDatabase } from '../helpers/databases.js';
import pg from 'pg';

const BIN = path.resolve(import.meta.dirname, '../../bin/tributary.js');
const run = promisify(execFile);
const CLEAN_ENV = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' };

function tributary(args: string[], env: Record<string, string> = {}) {
  return run(process.execPath, [BIN, ...args], { env: { ...CLEAN_ENV, ...env } });
}

/** Starts `tributary serve` and resolves once it prints its URL (and, on a first start, the key). */
function serve(args: string[]): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--log-level', 'warn', ...args], { env: CLEAN_ENV });
  let output = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening at (http:\/\/\S+) /.exec(output);
      if (match) {
        child.stdout!.off('data', onData);
        resolve({ child, url: match[1]!, output: () => output });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${output}`)));
  });
}

function exitCode(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

describe('tributary CLI', () => {
  const children = killedAfterAll();

  it('serve --help lists every setting with its TRIBUTARY_ variable and its default', async () => {
    const { stdout } = await tributary(['serve', '--help']);
    for (const s of SETTINGS) {
      expect(stdout).toContain(s.flag);
      expect(stdout).toContain(envName(s.flag));
    }
    const text = stdout.replace(/\s+/g, ' ');
    expect(text).toContain('--host <value> interface to listen on (default: 127.0.0.1) (env: TRIBUTARY_HOST)');
    expect(text).toContain('largest API request body, in bytes (default: 4194304) (env: TRIBUTARY_BODY_LIMIT)');
    expect(text).toContain('(default: SQLite) (env: TRIBUTARY_DATABASE_URL)');
    expect(text).toContain('(default: true with --s3-endpoint, else false)');
    // The quota counts the worker's CPU time, not the run's wall-clock time.
    expect(text).toContain("free plan: milliseconds of compute (the worker's CPU time) per UTC day (default: 1800000)");
    expect(envName('--data-dir')).toBe('TRIBUTARY_DATA_DIR');
  });

  it('rejects a bad setting with a clear message and exit code 2', async () => {
    const error = await tributary(['users', 'list', '--database-url', 'mysql://x']).catch((e: { code: number; stderr: string }) => e);
    expect((error as { code: number }).code).toBe(2);
    expect((error as { stderr: string }).stderr).toContain('--database-url (TRIBUTARY_DATABASE_URL): expected a postgres:// URL');
  });

  it('exits 2 on an unknown flag, a value outside its choices or a missing command, and 0 on --help', async () => {
    for (const [args, said] of [
      [['list', '--bogus'], "error: unknown option '--bogus'"],
      [['login', '--url', '127.0.0.1:9', '--key', 'trb_x'], 'error: "127.0.0.1:9" is not a server address: give it as http://host:3000 (or https://…)'],
      [['whoami', '--url', 'localhost:9', '--key', 'trb_x'], 'error: "localhost:9" is not a server address'],
      [['events', 'dc_x', '-n', '101', '--url', 'http://127.0.0.1:9', '--key', 'trb_x'], 'error: -n takes a whole number from 0 to 100, not "101"'],
      [['users', 'create', '--username', 'x', '--email', 'x@example.test', '--plan', 'gold', '--data-dir', tempDir()], "argument 'gold' is invalid"],
      [[], 'Usage: tributary'],
    ] as const) {
      const error = await tributary([...args]).then(
        () => ({ code: 0, stderr: '' }),
        (e: { code: number; stderr: string }) => e,
      );
      expect({ args, code: error.code }).toEqual({ args, code: 2 });
      expect(error.stderr).toContain(said);
    }
    expect((await tributary(['list', '--help'])).stdout).toContain('Usage: tributary list');
  });

  it('--version and -V print the version of package.json and exit 0', async () => {
    const { version } = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) expect(await tributary([flag])).toEqual({ stdout: `${version}\n`, stderr: '' });
  });

  it("says in each client command's --help what its flags do there: --name's default, no --interactive on update", async () => {
    const help = async (command: string) => (await tributary([command, '--help'])).stdout.replace(/\s+/g, ' ');
    expect(await help('deploy')).toContain('--name <name> the source name (default: the name slug of the component)');
    expect(await help('dev')).toContain('--name <name> the source name (default: the file name with -dev, as orders-dev for orders.mjs)');
    const update = await help('update');
    expect(update).toContain('--name <name> a new name for the source (default: it keeps its name)');
    expect(update).not.toContain('--interactive');
    expect(await help('run')).toContain('--event <json> the event: any JSON value, as the API takes it');
  });

  it('creates, lists and rotates accounts, storing only key hashes', async () => {
    const dataDir = tempDir();
    await tributary(['migrate', '--data-dir', dataDir]);
    // None yet: said on standard error, as tributary list says it, so that standard output holds only rows.
    expect(await tributary(['users', 'list', '--data-dir', dataDir])).toEqual({ stdout: '', stderr: 'no accounts\n' });
    expect(await tributary(['users', 'list', '--json', '--data-dir', dataDir])).toEqual({ stdout: '', stderr: '' });
    const { stdout } = await tributary([
      'users',
      'create',
      '--username',
      'ada',
      '--email',
      'ada@example.test',
      '--plan',
      'paid',
      '--json',
      '--data-dir',
      dataDir,
    ]);
    const created = JSON.parse(stdout.trim());
    expect(Object.keys(created)).toEqual(['id', 'username', 'email', 'plan', 'api_key']);
    expect(created).toMatchObject({ username: 'ada', email: 'ada@example.test', plan: 'paid' });

    // The variable works as the flag does.
    const listed = await tributary(['users', 'list', '--json'], { TRIBUTARY_DATA_DIR: dataDir });
    expect(JSON.parse(listed.stdout.trim())).toMatchObject({ id: created.id, username: 'ada', plan: 'paid' });

    // A table with a header, each column as wide as its widest value, as tributary list prints; --json as it was.
    const grace = JSON.parse(
      (await tributary(['users', 'create', '--username', 'grace-hopper', '--email', 'g@example.test', '--json', '--data-dir', dataDir])).stdout,
    );
    const table = await tributary(['users', 'list', '--data-dir', dataDir]);
    expect(table.stderr).toBe('');
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID {2,}USERNAME {2,}EMAIL {2,}PLAN {2,}CREATED$/);
    const created_ = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
    expect(
      lines
        .slice(1)
        .map((line) => line.split(/ {2,}/))
        .sort((x, y) => x[1]!.localeCompare(y[1]!)),
    ).toEqual([
      [created.id, 'ada', 'ada@example.test', 'paid', expect.stringMatching(created_)],
      [grace.id, 'grace-hopper', 'g@example.test', 'free', expect.stringMatching(created_)],
    ]);
    for (const header of ['USERNAME', 'EMAIL', 'PLAN', 'CREATED']) {
      const at = lines[0]!.indexOf(header);
      for (const line of lines.slice(1)) expect(line[at - 1], `${header} in ${line}`).toBe(' ');
      for (const line of lines.slice(1)) expect(line[at], `${header} in ${line}`).not.toBe(' ');
    }
    const json = (await tributary(['users', 'list', '--json', '--data-dir', dataDir])).stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(json.map((account) => Object.keys(account))).toEqual([
      ['id', 'username', 'email', 'plan', 'created_at'],
      ['id', 'username', 'email', 'plan', 'created_at'],
    ]);

    const duplicate = await tributary(['users', 'create', '--username', 'ada', '--email', 'a@b.c', '--data-dir', dataDir]).catch((e) => e);
    expect(duplicate.code).toBe(2);
    expect(duplicate.stderr).toContain('username "ada" is taken');

    const rotated = JSON.parse((await tributary(['users', 'rotate-key', 'ada', '--json', '--data-dir', dataDir])).stdout.trim());
    expect(rotated.api_key).not.toBe(created.api_key);

    const db = openSqliteFile(path.join(dataDir, 'tributary.db'), { readonly: true });
    const row = db.prepare('select api_key_hash from users where id = ?').get(created.id) as { api_key_hash: string };
    const dump = JSON.stringify(db.prepare('select * from users').all());
    db.close();
    expect(row.api_key_hash).toBe(hashApiKey(rotated.api_key));
    expect(dump).not.toContain(rotated.api_key);
    expect(dump).not.toContain(created.api_key);
  });

  it('refuses a --data-dir (or TRIBUTARY_DATA_DIR) that is a file, or below one, as a bad argument: exit 2, one line naming it', async () => {
    const file = path.join(tempDir(), 'a-file');
    fs.writeFileSync(file, 'kept');
    const below = path.join(file, 'data');
    const isFile = `error: --data-dir (TRIBUTARY_DATA_DIR): ${file} is not a directory\n`;
    for (const [args, env, stderr] of [
      [['serve', '--port', '0', '--data-dir', file], {}, isFile],
      [['serve', '--port', '0'], { TRIBUTARY_DATA_DIR: file }, isFile],
      [['migrate', '--data-dir', file], {}, isFile],
      [['backup', '--data-dir', file, '--out', path.join(tempDir(), 'b.db')], {}, isFile],
      [['users', 'list', '--data-dir', file], {}, isFile],
      [
        ['users', 'create', '--username', 'x', '--email', 'x@example.test', '--data-dir', below],
        {},
        `error: --data-dir (TRIBUTARY_DATA_DIR): ${below} cannot be made: ${file} is not a directory\n`,
      ],
    ] as const) {
      const error = await tributary([...args], env).then(
        (done) => ({ code: 0, stdout: done.stdout, stderr: done.stderr }),
        (e: { code: number; stdout: string; stderr: string }) => e,
      );
      expect({ args, code: error.code, stdout: error.stdout, stderr: error.stderr }).toEqual({ args, code: 2, stdout: '', stderr });
    }
    expect(fs.readFileSync(file, 'utf8')).toBe('kept');
  });

  it('refuses the default data directory, ./data, when a file stands there, as a given one: exit 2, one line naming it the default', async () => {
    // getcwd answers the real path, which the message names.
    const cwd = fs.realpathSync(tempDir());
    const file = path.join(cwd, 'data');
    fs.writeFileSync(file, 'kept');
    const stderr = `error: --data-dir (TRIBUTARY_DATA_DIR): ${file} is not a directory (./data, the default when neither is set)\n`;
    for (const args of [
      ['serve', '--port', '0'],
      ['migrate'],
      ['backup', '--out', path.join(tempDir(), 'b.db')],
      ['users', 'list'],
      ['users', 'create', '--username', 'x', '--email', 'x@example.test'],
    ]) {
      const error = await run(process.execPath, [BIN, ...args], { env: CLEAN_ENV, cwd }).then(
        (done) => ({ code: 0, stdout: done.stdout, stderr: done.stderr }),
        (e: { code: number; stdout: string; stderr: string }) => e,
      );
      expect({ args, code: error.code, stdout: error.stdout, stderr: error.stderr }).toEqual({ args, code: 2, stdout: '', stderr });
    }
    expect(fs.readFileSync(file, 'utf8')).toBe('kept');
    expect(fs.readdirSync(cwd)).toEqual(['data']);
  });

  it('serve exits 1 with one line when the data directory cannot be made under /proc or takes no files', async () => {
    // Under /proc mkdir answers ENOENT though the parent exists; /sys is a folder no file can be made in, even by root.
    for (const [dataDir, said] of [
      ['/proc/nope', 'cannot be made (ENOENT)'],
      ['/proc/nope/deeper', 'cannot be made (ENOENT)'],
      ['/sys', 'cannot be written to (EACCES)'],
    ] as const) {
      const error = await tributary(['serve', '--port', '0', '--data-dir', dataDir]).then(
        () => ({ code: 0, stderr: '' }),
        (e: { code: number; stderr: string }) => e,
      );
      expect({ dataDir, code: error.code, stderr: error.stderr }).toEqual({
        dataDir,
        code: 1,
        stderr: `error: the data directory ${dataDir} ${said}: set --data-dir (TRIBUTARY_DATA_DIR) to a folder this user may write\n`,
      });
    }
  });

  it('users list and rotate-key refuse a data directory without a database, creating nothing; users create starts one', async () => {
    const missing = path.join(tempDir(), 'typo');
    const empty = tempDir();
    for (const [args, dataDir] of [
      [['users', 'list'], missing],
      [['users', 'list', '--json'], empty],
      [['users', 'rotate-key', 'ada'], empty],
    ] as const) {
      const error = await tributary([...args, '--data-dir', dataDir]).then(
        (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
        (e: { code: number; stdout: string; stderr: string }) => e,
      );
      expect({ args, code: error.code, stdout: error.stdout }).toEqual({ args, code: 2, stdout: '' });
      expect(error.stderr).toBe(`error: no Tributary database at ${path.join(dataDir, 'tributary.db')}: check --data-dir (or pass --database-url)\n`);
    }
    expect(fs.existsSync(missing)).toBe(false);
    expect(fs.readdirSync(empty)).toEqual([]);
    await tributary(['users', 'create', '--username', 'first', '--email', 'first@example.test', '--data-dir', missing]);
    expect((await tributary(['users', 'list', '--data-dir', missing])).stdout).toMatch(/\n\S+ {2,}first {2,}first@example\.test {2,}free {2,}\S+\n$/);
  });

  it.skipIf(!process.env.TRIBUTARY_TEST_DATABASE_URL)(
    'users list and rotate-key refuse a PostgreSQL database without Tributary tables, creating none; users create starts one',
    async () => {
      const database = await createTestDatabase();
      try {
        const location = new URL(database.url);
        if (location.password) location.password = '***';
        for (const args of [
          ['users', 'list'],
          ['users', 'list', '--json'],
          ['users', 'rotate-key', 'ada'],
        ]) {
          const error = await tributary([...args, '--database-url', database.url]).then(
            (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
            (e: { code: number; stdout: string; stderr: string }) => e,
          );
          expect({ args, code: error.code, stdout: error.stdout, stderr: error.stderr }).toEqual({
            args,
            code: 2,
            stdout: '',
            stderr: `error: no Tributary database at ${location.toString()}: it holds no Tributary tables; check --database-url\n`,
          });
        }
        const client = new pg.Client({ connectionString: database.url });
        await client.connect();
        const tables = await client.query("select count(*)::int as n from information_schema.tables where table_schema = 'public'");
        await client.end();
        expect(tables.rows[0]).toEqual({ n: 0 });
        await tributary(['users', 'create', '--username', 'first', '--email', 'first@example.test', '--database-url', database.url]);
        expect((await tributary(['users', 'list', '--database-url', database.url])).stdout).toMatch(
          /\n\S+ {2,}first {2,}first@example\.test {2,}free {2,}\d{4}-\S+Z\n$/,
        );
      } finally {
        await database.drop();
      }
    },
  );

  it('says a database it cannot open as every other error, with error: and exit code 1', async () => {
    const dataDir = tempDir();
    fs.mkdirSync(path.join(dataDir, 'tributary.db'));
    const cases: string[][] = [['--data-dir', dataDir]];
    const url = process.env.TRIBUTARY_TEST_DATABASE_URL;
    if (url) cases.push(['--database-url', Object.assign(new URL(url), { pathname: '/tributary_no_such_database' }).toString()]);
    for (const storage of cases) {
      const error = await tributary(['users', 'list', ...storage]).then(
        () => ({ code: 0, stderr: '' }),
        (e: { code: number; stderr: string }) => e,
      );
      expect({ storage, code: error.code }).toEqual({ storage, code: 1 });
      expect(error.stderr).toMatch(/^error: \S/);
      expect(error.stderr.split('\n').filter(Boolean)).toHaveLength(1);
      if (storage[0] === '--database-url') expect(error.stderr).toContain('error: cannot open the database at postgres://');
    }
  });

  it('serve creates an account on an empty database, accepts users created while it runs, and exits 0 on SIGTERM', async () => {
    const dataDir = tempDir();
    const server = await serve(['--data-dir', dataDir]);
    children.push(server.child);
    const key = /API key \(shown once, store it now\): (\S+)/.exec(server.output())?.[1];
    expect(key).toBeDefined();
    const me = await request('GET', `${server.url}/v1/users/me`, { key: key! });
    expect(me.status).toBe(200);
    expect(me.body.data.username).toBe('admin');

    const { stdout } = await tributary(['users', 'create', '--username', 'bob', '--email', 'bob@example.test', '--json', '--data-dir', dataDir]);
    const bob = JSON.parse(stdout.trim());
    const bobMe = await request('GET', `${server.url}/v1/users/me`, { key: bob.api_key });
    expect(bobMe.status).toBe(200);
    expect(bobMe.body.data.api_key).toBe(bob.api_key);

    const health = await request('GET', `${server.url}/healthz`);
    expect(health.body).toEqual({ status: 'ok', database: 'ok' });
    expect(server.output()).not.toContain(bob.api_key);

    const exited = exitCode(server.child);
    server.child.kill('SIGTERM');
    expect(await exited).toBe(0);

    // A second start on the same data keeps the accounts and prints no new key.
    const again = await serve(['--data-dir', dataDir]);
    children.push(again.child);
    expect(again.output()).not.toContain('API key');
    expect((await request('GET', `${again.url}/v1/users/me`, { key: bob.api_key })).status).toBe(200);
    const exitedAgain = exitCode(again.child);
    again.child.kill('SIGTERM');
    expect(await exitedAgain).toBe(0);
  });

  it('serve --port 0 --public-url prints the address it listens at (the port it picked) and the public URL', async () => {
    const server = await serve(['--data-dir', tempDir(), '--public-url', 'https://events.example.test']);
    children.push(server.child);
    const port = /listening at http:\/\/127\.0\.0\.1:(\d+) \(/.exec(server.output())?.[1];
    expect(port).toBeDefined();
    expect(server.output()).toContain(
      `listening at http://127.0.0.1:${port} (public URL https://events.example.test, API base https://events.example.test/v1, docs https://events.example.test/docs)`,
    );
    expect((await request('GET', `http://127.0.0.1:${port}/healthz`)).body).toEqual({ status: 'ok', database: 'ok' });
    const exited = exitCode(server.child);
    server.child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('--metrics-port on --port itself is refused as such, not as a port another process is using', async () => {
    const dataDir = tempDir();
    for (const hosts of [[], ['--host', '0.0.0.0']]) {
      const failed = await tributary(['serve', '--port', '40999', '--metrics-port', '40999', ...hosts, '--data-dir', dataDir]).then(
        () => ({ code: 0, stdout: '', stderr: '' }),
        (e: { code: number; stdout: string; stderr: string }) => e,
      );
      expect({ code: failed.code, stdout: failed.stdout, stderr: failed.stderr }).toEqual({
        code: 2,
        stdout: '',
        stderr: 'error: --metrics-port and --port are both 40999: the metrics listener needs a port of its own (0 picks a free one)\n',
      });
    }
    expect(fs.readdirSync(dataDir)).toEqual([]);
  });

  it('an empty --database-url (or TRIBUTARY_DATABASE_URL) is no database URL: --role worker and api are refused (exit 2), not served on SQLite', async () => {
    const dataDir = tempDir();
    for (const [args, env] of [
      [['--role', 'worker', '--database-url', ''], {}],
      [['--role', 'api', '--port', '0'], { TRIBUTARY_DATABASE_URL: '' }],
    ] as const) {
      const role = args[1];
      const failed = await tributary(['serve', '--data-dir', dataDir, ...args], env).then(
        () => ({ code: 0, stdout: '', stderr: '' }),
        (e: { code: number; stdout: string; stderr: string }) => e,
      );
      expect({ args, env, code: failed.code, stdout: failed.stdout, stderr: failed.stderr }).toEqual({
        args,
        env,
        code: 2,
        stdout: '',
        stderr: `error: --role ${role} needs --database-url: nodes of a cluster share a PostgreSQL database; on SQLite one process does everything (--role all)\n`,
      });
    }
    expect(fs.readdirSync(dataDir)).toEqual([]);
  });

  it('--port (or TRIBUTARY_PORT) on a worker node, which listens on no port, is refused (exit 2) before it connects', async () => {
    const dataDir = tempDir();
    // Port 1 refuses connections: a node that got as far as the database would end with exit 1, not 2.
    const worker = ['serve', '--role', 'worker', '--database-url', 'postgres://u@127.0.0.1:1/x', '--database-wait', '0', '--data-dir', dataDir];
    const stderr =
      'error: --port (TRIBUTARY_PORT) 3001 on a worker node: --role worker listens on no port (its /healthz and /readyz are on --metrics-port; --public-url sets its endpoint URLs)\n';
    for (const [args, env] of [
      [['--port', '3001'], {}],
      [[], { TRIBUTARY_PORT: '3001' }],
    ] as const) {
      const failed = await tributary([...worker, ...args], env).then(
        () => ({ code: 0, stdout: '', stderr: '' }),
        (e: { code: number; stdout: string; stderr: string }) => e,
      );
      expect({ args, env, code: failed.code, stdout: failed.stdout, stderr: failed.stderr }).toEqual({ args, env, code: 2, stdout: '', stderr });
    }
    expect(fs.readdirSync(dataDir)).toEqual([]);
  });

  it('--host (or TRIBUTARY_HOST) on a worker node, which listens on no interface, is refused (exit 2) before it connects', async () => {
    const dataDir = tempDir();
    // Port 1 refuses connections: a node that got as far as the database would end with exit 1, not 2.
    const worker = ['serve', '--role', 'worker', '--database-url', 'postgres://u@127.0.0.1:1/x', '--database-wait', '0', '--data-dir', dataDir];
    const stderr =
      'error: --host (TRIBUTARY_HOST) 0.0.0.0 on a worker node: --role worker listens on no interface (its metrics listener binds to --metrics-host; --public-url sets its endpoint URLs)\n';
    for (const [args, env] of [
      [['--host', '0.0.0.0'], {}],
      [[], { TRIBUTARY_HOST: '0.0.0.0' }],
    ] as const) {
      const failed = await tributary([...worker, ...args], env).then(
        () => ({ code: 0, stdout: '', stderr: '' }),
        (e: { code: number; stdout: string; stderr: string }) => e,
      );
      expect({ args, env, code: failed.code, stdout: failed.stdout, stderr: failed.stderr }).toEqual({ args, env, code: 2, stdout: '', stderr });
    }
    expect(fs.readdirSync(dataDir)).toEqual([]);
  });

  it('names the flag when --host or --metrics-host is a host name that does not resolve (exit 1)', async () => {
    for (const args of [
      ['--host', 'no-such-host.invalid'],
      ['--metrics-port', '0', '--metrics-host', 'no-such-host.invalid'],
    ]) {
      const error = await tributary(['serve', '--port', '0', '--log-level', 'silent', '--data-dir', tempDir(), ...args]).then(
        (r) => ({ code: 0, stderr: r.stderr }),
        (e: { code: number; stderr: string }) => e,
      );
      expect({ args, code: error.code, stderr: error.stderr }).toEqual({
        args,
        code: 1,
        stderr: 'error: cannot listen on no-such-host.invalid: no such host name: choose another --host (or --metrics-host)\n',
      });
    }
  });

  it('a first start that fails (its port in use) creates no account, so the next start prints the key', async () => {
    const dataDir = tempDir();
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as net.AddressInfo).port;
    const failed = await tributary(['serve', '--port', String(port), '--log-level', 'silent', '--data-dir', dataDir]).then(
      () => ({ code: 0, stdout: '', stderr: '' }),
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
    await new Promise((resolve) => taken.close(resolve));
    expect({ code: failed.code, stdout: failed.stdout }).toEqual({ code: 1, stdout: '' });
    expect(failed.stderr).toContain(`error: cannot listen on 127.0.0.1:${port}: another process is using it: stop that, or choose another port`);

    const server = await serve(['--data-dir', dataDir]);
    children.push(server.child);
    await waitFor(
      async () => server.output(),
      (output) => output.includes('API key (shown once, store it now): '),
      { what: 'the key of the account the first start made' },
    );
    const key = /API key \(shown once, store it now\): (\S+)/.exec(server.output())![1]!;
    expect((await request('GET', `${server.url}/v1/users/me`, { key })).body.data.username).toBe('admin');
    const exited = exitCode(server.child);
    server.child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  // It said "another tributary serve" whatever held the lock: a restore at work was taken for a server.
  it('names the command that holds the data directory when serve is refused', async () => {
    const dataDir = tempDir();
    const lock = lockDataDir(dataDir, 'stop it first', 'restore');
    try {
      const refused = await tributary(['serve', '--port', '0', '--data-dir', dataDir]).catch((e: { code: number; stderr: string }) => e);
      expect((refused as { code: number }).code).toBe(2);
      expect((refused as { stderr: string }).stderr).toContain(`error: another tributary restore (pid ${process.pid}) is using the data directory ${dataDir}`);
    } finally {
      lock.release();
    }
    expect(fs.existsSync(path.join(dataDir, 'tributary.pid'))).toBe(false);
  });

  it('refuses a second serve on a data directory a running server uses, and starts again after a crash', async () => {
    const dataDir = tempDir();
    const first = await serve(['--data-dir', dataDir]);
    children.push(first.child);
    const second = await tributary(['serve', '--port', '0', '--data-dir', dataDir]).catch((e: { code: number; stderr: string }) => e);
    expect((second as { code: number }).code).toBe(2);
    expect((second as { stderr: string }).stderr).toContain(`error: another tributary serve (pid ${first.child.pid}) is using the data directory ${dataDir}`);
    // The users commands still work beside the server.
    await tributary(['users', 'list', '--data-dir', dataDir]);

    // A server killed without shutting down loses its lock with its process; the next start gets it.
    const killed = exitCode(first.child);
    first.child.kill('SIGKILL');
    await killed;
    const next = await serve(['--data-dir', dataDir]);
    children.push(next.child);
    const exited = exitCode(next.child);
    next.child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
  it('says whose lock it is when another process holds the database write lock past the wait (serve, users create)', { timeout: 30_000 }, async () => {
    const dataDir = tempDir();
    await tributary(['users', 'create', '--data-dir', dataDir, '--username', 'first', '--email', 'first@example.com']);
    const file = path.join(dataDir, 'tributary.db');
    // A sqlite3 shell left in a transaction, as far as SQLite can tell: another process that took the write lock.
    const holder = spawn(process.execPath, [
      '-e',
      `const D = require(${JSON.stringify(SQLITE_DRIVER_PATH)}); const d = new D(${JSON.stringify(file)});` +
        ` d.exec('begin exclusive'); console.log('locked'); setInterval(() => {}, 1000);`,
    ]);
    children.push(holder);
    await new Promise((resolve) => holder.stdout!.once('data', resolve));
    const failed = (args: string[]) =>
      tributary(args).then(
        () => ({ code: 0, stderr: '' }),
        (e: { code: number; stderr: string }) => e,
      );
    const [created, served] = await Promise.all([
      failed(['users', 'create', '--data-dir', dataDir, '--username', 'second', '--email', 'second@example.com']),
      failed(['serve', '--port', '0', '--log-level', 'error', '--data-dir', dataDir]),
    ]);
    for (const result of [created, served]) {
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`error: the database ${file} is locked by another process`);
      expect(result.stderr).toContain('a sqlite3 shell left in a transaction');
      expect(result.stderr).toContain('then try again');
    }
    const released = exitCode(holder);
    holder.kill('SIGKILL');
    await released;
    await tributary(['users', 'create', '--data-dir', dataDir, '--username', 'second', '--email', 'second@example.com']);
  });
});
