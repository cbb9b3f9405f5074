// The server under test: `tributary serve` in its own process, own temp data dir, one paid-plan account.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { cleanEnv, removeDir, spawnTracked, stopChild, tempDir, waitForOutput } from './proc.mjs';

const execFileP = promisify(execFile);
export const ROOT = path.resolve(import.meta.dirname, '../..');
export const BIN = path.join(ROOT, 'bin/tributary.js');

/** A minimal JSON client for setting things up (not for measuring). */
export function apiClient(baseUrl, key) {
  const call = async (method, pathAndQuery, body) => {
    const headers = { authorization: `Bearer ${key}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${baseUrl}${pathAndQuery}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    let json;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = text;
    }
    return { status: res.status, body: json };
  };
  return {
    get: (p) => call('GET', p),
    post: (p, body) => call('POST', p, body),
    put: (p, body) => call('PUT', p, body),
    delete: (p) => call('DELETE', p),
    /** Like post/get but throws unless the status is 2xx. */
    async ok(method, p, body) {
      const res = await call(method, p, body);
      if (res.status < 200 || res.status > 299) throw new Error(`${method} ${p} answered ${res.status}: ${JSON.stringify(res.body)}`);
      return res.body;
    },
  };
}

/**
 * Starts `tributary serve --port 0` with a fresh data dir, `--log-level warn --rate-limit 0` and `extraArgs`,
 * after creating a paid-plan account in that data dir. `options.nodeArgs` go to node before the script.
 */
export async function startTributary(extraArgs = [], options = {}) {
  const dataDir = tempDir('tributary-bench-');
  const created = await execFileP(
    process.execPath,
    [BIN, 'users', 'create', '--username', 'bench', '--email', 'bench@example.test', '--plan', 'paid', '--json', '--data-dir', dataDir],
    { env: cleanEnv(), cwd: ROOT },
  );
  const key = JSON.parse(created.stdout.trim().split('\n').pop()).api_key;
  // BENCH_SERVER_ARGS, e.g. "--batch-window 8", adds `tributary serve` flags, to compare settings.
  const settings = (process.env.BENCH_SERVER_ARGS ?? '').split(/\s+/).filter(Boolean);
  const args = [BIN, 'serve', '--port', '0', '--data-dir', dataDir, '--log-level', 'warn', '--rate-limit', '0', ...extraArgs, ...settings];
  // BENCH_SERVER_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", profiles the server under test.
  const nodeArgs = [...(options.nodeArgs ?? []), ...(process.env.BENCH_SERVER_NODE_ARGS ?? '').split(/\s+/).filter(Boolean)];
  const child = spawnTracked(process.execPath, [...nodeArgs, ...args], { cwd: ROOT });
  let url;
  try {
    [, url] = await waitForOutput(child, /listening at (http:\/\/\S+) /);
  } catch (error) {
    await stopChild(child, { graceMs: 2000 });
    removeDir(dataDir);
    throw error;
  }
  return {
    url,
    key,
    pid: child.pid,
    dataDir,
    child,
    command: `node bin/tributary.js ${args.slice(1).join(' ')}`,
    api: apiClient(url, key),
    output: () => child.outputTail(),
    async stop() {
      await stopChild(child);
      removeDir(dataDir);
    },
  };
}
