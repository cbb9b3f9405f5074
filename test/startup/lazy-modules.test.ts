// What a server loads at start: packages for work it may never do (outbound HTTP, email, metrics, PostgreSQL) load
// with their first use, which keeps an idle server's heap small (BENCHMARKS.md, session 16).
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { killedAfterAll } from '../helpers/cleanups.js';
import { client, request } from '../helpers/client.js';
import { createAccount, serve } from '../helpers/processes.js';
import { tempDir } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { startReceiver } from '../delivery/helpers.js';
import { SQLITE_DRIVER } from '../../src/store/sqlite-file.js';

// Loaded into the server with --import: a module hook (on its own thread) reports each file loaded, CommonJS or ESM;
// on SIGUSR2 the server prints the packages loaded so far as one JSON line.
const REPORTER = `
import { register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';
const HOOK = 'let port; export function initialize(data) { port = data.port; }' +
  ' export async function load(url, context, next) { port.postMessage(url); return next(url, context); }';
const { port1, port2 } = new MessageChannel();
const files = new Set();
port1.on('message', (url) => files.add(url));
port1.unref();
register('data:text/javascript,' + encodeURIComponent(HOOK), { data: { port: port2 }, transferList: [port2] });
process.on('SIGUSR2', () => {
  const names = new Set();
  for (const file of files) {
    const match = /node_modules\\/((?:@[^/]+\\/)?[^/]+)/.exec(file);
    if (match) names.add(match[1]);
  }
  process.stdout.write(JSON.stringify({ loadedPackages: [...names].sort() }) + '\\n');
});
`;

const EMITTER = `module.exports = { name: "Emitter", version: "0.0.1", props: { http: "$.interface.http" }, async run(event) { this.$emit({ n: event.body.n }); } };`;

describe('packages a server loads', () => {
  const children = killedAfterAll();

  it('leaves undici, nodemailer, prom-client and pg unloaded until they are needed, and loads undici for the first webhook', async () => {
    const dataDir = tempDir();
    const reporter = path.join(tempDir(), 'report-packages.mjs');
    fs.writeFileSync(reporter, REPORTER);
    const key = await createAccount(['--data-dir', dataDir], 'lazy');
    const { child, url } = await serve(['--data-dir', dataDir, '--allow-private-network'], [`--import=${reporter}`]);
    children.push(child);
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    let asked = 0;
    const loadedPackages = async (): Promise<string[]> => {
      const reports = () => output.split('\n').filter((line) => line.startsWith('{"loadedPackages"'));
      const seen = reports().length;
      asked++;
      child.kill('SIGUSR2');
      const lines = await waitFor(
        async () => reports(),
        (all) => all.length > seen,
        { what: `report ${asked} of the loaded packages` },
      );
      return (JSON.parse(lines.at(-1)!) as { loadedPackages: string[] }).loadedPackages;
    };

    const atStart = await loadedPackages();
    // The reporter sees what the server loaded: its web framework, query builder and database driver are there.
    expect(atStart).toEqual(expect.arrayContaining(['fastify', 'kysely', SQLITE_DRIVER]));
    for (const name of ['undici', 'nodemailer', 'prom-client', 'pg']) expect(atStart).not.toContain(name);

    const receiver = await startReceiver();
    try {
      const api = client(url, key);
      const source = await api.post('/v1/sources', { component_code: EMITTER, name: 'lazy' });
      expect(source.status, JSON.stringify(source.body)).toBe(200);
      const hook = await api.post(`/v1/webhooks?${new URLSearchParams({ url: `${receiver.url}/hook`, name: 'lazy', description: 'lazy' })}`);
      expect(hook.status).toBe(200);
      const subscribed = await api.post(`/v1/subscriptions?${new URLSearchParams({ emitter_id: source.body.data.id, listener_id: hook.body.data.id })}`);
      expect(subscribed.status).toBe(200);
      expect((await request('POST', source.body.data.configured_props.http.endpoint_url, { body: { n: 1 } })).status).toBe(200);
      await waitFor(
        async () => receiver.on('/hook'),
        (received) => received.length === 1,
        { what: 'the first webhook delivery' },
      );
      expect(JSON.parse(receiver.on('/hook')[0]!.body).event).toEqual({ n: 1 });
      const afterDelivery = await loadedPackages();
      expect(afterDelivery).toContain('undici');
      expect(afterDelivery).not.toContain('nodemailer');
    } finally {
      await receiver.close();
    }
  });
});
