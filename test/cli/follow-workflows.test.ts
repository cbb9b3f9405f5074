// `tributary events p_… -f` and `logs p_… -f`, which follow a workflow by polling its lists: from a workflow with
// nothing yet, across a server restart, into a reader that goes away, and for longer than a few polls.
import { getEventListeners } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api.js';
import { showStream, type Stream } from '../../src/client/follow.js';
import { client } from '../helpers/client.js';
import { type RunningCli, runCli, startCli } from '../helpers/cli.js';
import { createAccount, freshStorage, killHard, serve } from '../helpers/processes.js';
import { startTestServer, tempDir } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const EMITTING_STEP =
  'export default defineComponent({ async run({ steps, $ }) { console.log("step saw", steps.trigger.event.n); $.send.emit({ raw_event: { n: steps.trigger.event.n } }); } });';

/** Follows `id` as `events`/`logs -f` do, into arrays of the lines printed and the notices, until `stop` aborts. */
function followInto(api: ApiClient, id: string, stream: Stream, limit: number) {
  const printed: string[] = [];
  const notices: string[] = [];
  const stop = new AbortController();
  const print = (line: string) => printed.push(line);
  const notice = (line: string) => notices.push(line);
  const following = showStream(api, id, { stream, limit, follow: true, json: false, print, notice, signal: stop.signal });
  return { printed, notices, stop, following };
}

describe('following a workflow', () => {
  it('events -f on a workflow that has none yet shows the first ones, and polls without piling up abort listeners', async () => {
    const server = await startTestServer('sqlite');
    try {
      const key = (await server.createUser()).apiKey;
      const api = client(server.url, key);
      const created = await api.post('/v1/workflows', { name: 'fresh', steps: [{ name: 'emit', component_code: EMITTING_STEP }] });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const id: string = created.body.data.id;

      const followed = new ApiClient({ url: server.url, key });
      let polls = 0;
      const get = followed.get.bind(followed);
      followed.get = <T>(p: string): Promise<T> => {
        polls++;
        return get<T>(p);
      };
      const { printed, notices, stop, following } = followInto(followed, id, 'events', 10);
      await waitFor(
        async () => polls,
        (n) => n >= 2,
      );
      // Before the fix the poll asked `before=head`, which is empty however many events come: this never showed.
      expect((await api.post(`/v1/workflows/${id}/run`, { n: 7 })).status).toBe(202);
      await waitFor(
        async () => printed.join('\n'),
        (text) => text.includes('{"raw_event":{"n":7}}'),
        { what: `the live event; printed ${printed.join(' | ')}` },
      );
      expect((await api.post(`/v1/workflows/${id}/run`, { n: 8 })).status).toBe(202);
      await waitFor(
        async () => printed.join('\n'),
        (text) => text.includes('{"raw_event":{"n":8}}'),
      );
      expect(printed.filter((line) => line.includes('"n":7'))).toHaveLength(1);
      // Each poll waited on a fresh abort listener that stayed: eleven of them made Node warn of a leak.
      const pollsSeen = polls;
      await waitFor(
        async () => polls,
        (n) => n >= pollsSeen + 3,
      );
      expect(getEventListeners(stop.signal, 'abort').length).toBeLessThanOrEqual(1);
      stop.abort();
      await following;
      expect(notices).toEqual([`following ${id} (Ctrl-C to stop)`]);
    } finally {
      await server.destroy();
    }
  });

  it('logs -f -n 1 shows the last run, then only runs that finish later, never the older ones it left out', async () => {
    const server = await startTestServer('sqlite');
    try {
      const key = (await server.createUser()).apiKey;
      const api = client(server.url, key);
      const created = await api.post('/v1/workflows', { name: 'older runs', steps: [{ name: 'emit', component_code: EMITTING_STEP }] });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const id: string = created.body.data.id;
      for (const n of [1, 2, 3]) {
        expect((await api.post(`/v1/workflows/${id}/run`, { n })).status).toBe(202);
        await waitFor(
          async () => (await api.get(`/v1/workflows/${id}/runs`)).body.data.filter((r: { status: string }) => r.status === 'succeeded').length,
          (finished) => finished === n,
        );
      }
      const followed = new ApiClient({ url: server.url, key });
      let gets = 0;
      const get = followed.get.bind(followed);
      followed.get = <T>(p: string): Promise<T> => {
        gets++;
        return get<T>(p);
      };
      const printed: string[] = [];
      const stop = new AbortController();
      const following = showStream(followed, id, {
        stream: '$logs',
        limit: 1,
        follow: true,
        json: false,
        print: (line) => printed.push(line),
        notice: () => undefined,
        signal: stop.signal,
      });
      // The first list, then a poll: before the fix that poll printed runs 1 and 2 as if they had just finished.
      await waitFor(
        async () => gets,
        (n) => n >= 3,
      );
      expect((await api.post(`/v1/workflows/${id}/run`, { n: 4 })).status).toBe(202);
      await waitFor(
        async () => printed.join('\n'),
        (text) => text.includes('step saw 4'),
        { what: `the run that finished while following; printed ${printed.join(' | ')}` },
      );
      stop.abort();
      await following;
      expect(printed.filter((line) => line.includes('step saw')).map((line) => line.slice(line.indexOf('step saw')))).toEqual(['step saw 3', 'step saw 4']);
    } finally {
      await server.destroy();
    }
  });

  it('stops at once on Ctrl-C while a poll waits on a server that stopped answering', async () => {
    // Answers the first list, then takes every later request and never answers it: a frozen server.
    const asked: string[] = [];
    const hanging: http.ServerResponse[] = [];
    const frozen = http.createServer((req, res) => {
      // The follow asks /readyz first (no note without a worker_nodes check): not one of the polls counted here.
      if (req.url === '/readyz') return void res.writeHead(404).end();
      asked.push(`${req.method} ${req.url}`);
      if (asked.length > 1) return void hanging.push(res);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ page_info: { total_count: 0, count: 0, start_cursor: null, end_cursor: null }, data: [] }));
    });
    await new Promise<void>((resolve) => frozen.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(frozen.address() as AddressInfo).port}`;
    const dir = tempDir('tributary-frozen-');
    const cli = startCli(['events', 'p_00000000000000000000000000', '-f', '--url', url, '--key', 'trb_x'], {
      env: { PATH: process.env.PATH ?? '', HOME: dir },
      cwd: dir,
    });
    try {
      await cli.waitForOutput(/following p_0+ \(Ctrl-C to stop\)/, 'stderr');
      await waitFor(
        async () => asked.length,
        (n) => n >= 2,
        { what: 'a poll left waiting' },
      );
      cli.child.kill('SIGINT');
      // Before, the command waited for the poll's answer (minutes, from a frozen server) before it could end.
      expect(await cli.exit).toBe(0);
      expect(cli.stderr()).not.toContain('connection lost');
    } finally {
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
      for (const res of hanging) res.destroy();
      await new Promise((resolve) => frozen.close(resolve));
    }
  });

  it("events -f rides out the key's rate limit (429 rate_limited) with a notice each way, instead of ending with exit 2", async () => {
    // Answers the first list empty, the next two polls 429, then a page with one event.
    let asked = 0;
    const page = (data: unknown[]) => ({
      page_info: { total_count: data.length, count: data.length, start_cursor: data.length ? 'c1' : null, end_cursor: null },
      data,
    });
    const limited = http.createServer((req, res) => {
      // The follow asks /readyz first (no note without a worker_nodes check): not one of the polls counted here.
      if (req.url === '/readyz') return void res.writeHead(404).end();
      asked++;
      if (asked === 2 || asked === 3) {
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
        return void res.end(JSON.stringify({ error: 'rate limit exceeded, retry in 1 second', code: 'rate_limited' }));
      }
      const event = { id: '1-0', indexed_at_ms: 0, event: { n: 'after' }, metadata: { emitter_id: 'p_x', emit_id: 'e', name: '', summary: 'came after' } };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(page(asked === 1 ? [] : [event])));
    });
    await new Promise<void>((resolve) => limited.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(limited.address() as AddressInfo).port}`;
    const dir = tempDir('tributary-limited-');
    const cli = startCli(['events', 'p_00000000000000000000000000', '-f', '--url', url, '--key', 'trb_x'], {
      env: { PATH: process.env.PATH ?? '', HOME: dir },
      cwd: dir,
    });
    try {
      await cli.waitForOutput(/the server refused a poll: rate limit exceeded, retry in 1 second \(429 rate_limited\); retrying each second/, 'stderr');
      await cli.waitForOutput(/came after/);
      await cli.waitForOutput(/the server answers again; resuming/, 'stderr');
      cli.child.kill('SIGINT');
      expect(await cli.exit).toBe(0);
    } finally {
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
      await new Promise((resolve) => limited.close(resolve));
    }
  });

  it('logs -f rides out a server restart with a notice each way; a reader that goes away ends the command with 0', async () => {
    const storage = await freshStorage('sqlite');
    let server = await serve(storage.args);
    const port = new URL(server.url).port;
    const key = await createAccount(storage.args, 'wf-follower');
    const api = () => client(server.url, key);
    const env = { PATH: process.env.PATH ?? '', HOME: tempDir('wf-follower-home-'), TRIBUTARY_URL: server.url, TRIBUTARY_KEY: key };
    const started: RunningCli[] = [];
    const start = (args: string[]) => {
      const cli = startCli(args, { env, cwd: env.HOME });
      started.push(cli);
      return cli;
    };
    try {
      const created = await api().post('/v1/workflows', { name: 'restarting', steps: [{ name: 'emit', component_code: EMITTING_STEP }] });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const id: string = created.body.data.id;

      const logs = start(['logs', id, '-f']);
      await logs.waitForOutput(/following/, 'stderr');
      await killHard(server.child);
      // Before the fix the first poll after the server went away ended the command with exit code 5.
      await logs.waitForOutput(/connection lost \(cannot reach .*\); retrying/, 'stderr');
      server = await serve([...storage.args, '--port', port]);
      expect((await api().post(`/v1/workflows/${id}/run`, { n: 3 })).status).toBe(202);
      await logs.waitForOutput(/wr_\w+\/emit {2}log +step saw 3/);
      await logs.waitForOutput(/wr_\w+ {2}succeeded \(1 step, \d+ ms\)/);
      await logs.waitForOutput(/reconnected/, 'stderr');
      logs.child.kill('SIGINT');
      expect(await logs.exit).toBe(0);

      // A reader gone before the next line (`| head -1`): the write must not die of an unhandled EPIPE.
      const piped = start(['logs', id, '-f', '-n', '0', '--json']);
      await piped.waitForOutput(/following/, 'stderr');
      piped.child.stdout!.destroy();
      expect((await api().post(`/v1/workflows/${id}/run`, { n: 4 })).status).toBe(202);
      expect(await piped.exit).toBe(0);
      expect(piped.stderr()).not.toMatch(/EPIPE|Error/);
    } finally {
      for (const cli of started) if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
      if (server.child.exitCode === null && server.child.signalCode === null) await killHard(server.child);
      await storage.cleanup();
    }
  });
  it('logs -f shows every run that finished since its last look, past the newest 100 too, each once', async () => {
    const server = await startTestServer('sqlite', { rateLimit: 0 });
    try {
      const key = (await server.createUser()).apiKey;
      const api = client(server.url, key);
      const created = await api.post('/v1/workflows', { name: 'burst', steps: [{ name: 'emit', component_code: EMITTING_STEP }] });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const id: string = created.body.data.id;

      // The second poll waits until 150 runs have finished: they all finish between two looks.
      const followed = new ApiClient({ url: server.url, key });
      let polls = 0;
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const get = followed.get.bind(followed);
      followed.get = async <T>(p: string): Promise<T> => {
        if (++polls === 2) await released;
        return get<T>(p);
      };
      const { printed, notices, stop, following } = followInto(followed, id, '$logs', 0);
      await waitFor(
        async () => polls,
        (n) => n >= 2,
      );
      for (let n = 0; n < 150; n += 25) {
        await Promise.all(Array.from({ length: 25 }, (_, i) => api.post(`/v1/workflows/${id}/run`, { n: n + i })));
      }
      await waitFor(
        () => api.get(`/v1/workflows/${id}/runs?status=succeeded&limit=1`),
        (res) => res.body.page_info?.total_count === 150,
        { what: '150 finished runs' },
      );
      release();
      const ends = () => printed.filter((line) => / {2}wr_\w+ {2}succeeded \(/.test(line));
      await waitFor(
        async () => ends().length,
        (n) => n >= 150,
        { what: `150 finished runs shown; ${ends().length} so far` },
      );
      // A look more, and nothing is shown twice.
      const pollsSeen = polls;
      await waitFor(
        async () => polls,
        (n) => n >= pollsSeen + 2,
      );
      stop.abort();
      await following;
      expect(new Set(ends().map((line) => line.split('  ')[1])).size).toBe(150);
      expect(ends()).toHaveLength(150);
      expect(printed.filter((line) => line.includes('step saw')).length).toBe(150);
      expect(notices).toEqual([`following ${id} (Ctrl-C to stop)`]);
    } finally {
      await server.destroy();
    }
  });

  it('logs says why a run exited early: the reason its step gave $.flow.exit(), as the console shows it', async () => {
    const server = await startTestServer('sqlite');
    try {
      const key = (await server.createUser()).apiKey;
      const api = client(server.url, key);
      const exiting = 'export default defineComponent({ async run({ $ }) { console.log("checked"); $.flow.exit("nothing to do"); } });';
      const created = await api.post('/v1/workflows', {
        name: 'exits',
        steps: [
          { name: 'check', component_code: exiting },
          { name: 'emit', component_code: EMITTING_STEP },
        ],
      });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const id: string = created.body.data.id;
      const queued = await api.post(`/v1/workflows/${id}/run`, { n: 1 });
      expect(queued.status).toBe(202);
      const runId: string = queued.body.data.id;
      await waitFor(
        async () => (await api.get(`/v1/workflows/${id}/runs/${runId}`)).body.data.status,
        (status) => status === 'succeeded',
      );
      const dir = tempDir('tributary-exit-reason-');
      const shown = await runCli(['logs', id], { env: { PATH: process.env.PATH ?? '', HOME: dir, TRIBUTARY_URL: server.url, TRIBUTARY_KEY: key }, cwd: dir });
      // The run's line said only "succeeded (1 step, … ms)": a run that stopped at its first step read as one that
      // had a single step, with nothing to say why the second never ran.
      expect([shown.code, shown.stderr]).toEqual([0, '']);
      const lines = shown.stdout.split('\n');
      expect(lines).toEqual([
        expect.stringMatching(new RegExp(`^\\S+Z  ${runId}/check  log    checked$`)),
        expect.stringMatching(new RegExp(`^\\S+Z  ${runId}  succeeded \\(1 step, \\d+ ms; exited: "nothing to do"\\)$`)),
        '',
      ]);
    } finally {
      await server.destroy();
    }
  });
});
