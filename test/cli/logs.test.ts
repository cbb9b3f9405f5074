// Logs are structured JSON with a request id, and never contain API keys or secret prop values.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/server.js';
import { client, request } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';

const BIN = path.resolve(import.meta.dirname, '../../bin/tributary.js');
const SECRET = 'sk-live-do-not-log-me-42';

describe('logs', () => {
  let child: ChildProcess | undefined;
  afterAll(() => child?.kill('SIGKILL'));

  it('carry request ids and no keys or secrets, even at debug level', async () => {
    child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--log-level', 'debug', '--data-dir', tempDir()], { env: { PATH: process.env.PATH ?? '' } });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await waitFor(
      async () => output,
      (o) => o.includes('Try: curl'),
      { what: 'the server banner' },
    );
    const url = /listening at (http:\/\/\S+) /.exec(output)![1]!;
    const key = /API key \(shown once, store it now\): (\S+)/.exec(output)![1]!;
    const bannerEnd = output.indexOf('/v1/users/me', output.indexOf('Try: curl')) + 12;

    const api = client(url, key);
    const code = `module.exports = { name: "Secretive", version: "1", props: { token: { type: "string", secret: true } },
      async run() { throw new Error("failed with a secret in scope"); } };`;
    const created = await api.post('/v1/sources', { component_code: code, configured_props: { token: SECRET } });
    expect(created.status).toBe(200);
    await api.post(`/v1/sources/${created.body.data.id}/run`, { hello: 'world' });
    await api.patch(`/v1/sources/${created.body.data.id}`, { configured_props: { token: 42 } });
    await request('GET', `${url}/v1/users/me`, { key: `${key}x` });
    await waitFor(
      () => api.get(`/v1/sources/${created.body.data.id}/$errors/event_summaries`),
      (r) => r.body.data.length === 1,
      { what: 'the failed run' },
    );

    const logs = output.slice(bannerEnd);
    const lines = logs.split('\n').filter((l) => l.startsWith('{'));
    expect(lines.length).toBeGreaterThan(5);
    const parsed = lines.map((l) => JSON.parse(l) as { reqId?: string; level: number });
    expect(parsed.some((l) => typeof l.reqId === 'string' && l.reqId.length > 0)).toBe(true);
    expect(logs).not.toContain(key);
    expect(logs).not.toContain(SECRET);
  });
});
