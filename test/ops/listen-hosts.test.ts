// --host and --metrics-host: an empty value is refused rather than taken as every interface, and an IPv6 address works.
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { killedAfterAll } from '../helpers/cleanups.js';
import { request } from '../helpers/client.js';
import { serve } from '../helpers/processes.js';
import { tempDir } from '../helpers/server.js';

describe('listen hosts', () => {
  const env = { PATH: process.env.PATH ?? '' };
  const children = killedAfterAll();

  it('an empty or malformed --host or --metrics-host (flag or variable) stops serve with exit 2 before it listens', async () => {
    const cases: [string[], Record<string, string>, string][] = [
      [['--host', ''], {}, 'error: --host (TRIBUTARY_HOST): expected an address or host name to listen on, got an empty value\n'],
      // Node's listen() took an empty host as every interface: the metrics, meant for this machine, were open to the network.
      [
        ['--metrics-port', '0'],
        { TRIBUTARY_METRICS_HOST: '' },
        'error: --metrics-host (TRIBUTARY_METRICS_HOST): expected an address or host name to listen on, got an empty value\n',
      ],
      [
        ['--metrics-port', '0', '--metrics-host', ' '],
        {},
        'error: --metrics-host (TRIBUTARY_METRICS_HOST): expected an address or host name to listen on, got an empty value\n',
      ],
      [
        ['--host', 'http://example.com'],
        {},
        'error: --host (TRIBUTARY_HOST): expected an address or host name to listen on (127.0.0.1, ::1, 0.0.0.0, localhost), got "http://example.com"\n',
      ],
      [
        ['--host', '::1::2'],
        {},
        'error: --host (TRIBUTARY_HOST): expected an address or host name to listen on (127.0.0.1, ::1, 0.0.0.0, localhost), got "::1::2"\n',
      ],
    ];
    for (const [args, extra, stderr] of cases) {
      const result = await runCli(['serve', '--port', '0', '--log-level', 'silent', '--data-dir', tempDir(), ...args], {
        env: { ...env, ...extra },
        cwd: tempDir(),
      });
      expect({ args, extra, ...result }).toEqual({ args, extra, code: 2, stdout: '', stderr });
    }
  });

  it('serve listens on an IPv6 address, bare or bracketed, and its default public URL brackets it', async () => {
    for (const host of ['::1', '[::1]']) {
      // It stopped with 'error: Invalid URL' (exit 1): the default public URL was http://::1:<port>.
      const { child, url } = await serve(['--host', host, '--data-dir', tempDir()]);
      children.push(child);
      expect(url).toMatch(/^http:\/\/\[::1\]:\d+$/);
      const health = await request('GET', `${url}/healthz`);
      expect({ host, status: health.status, body: health.body }).toEqual({ host, status: 200, body: { status: 'ok', database: 'ok' } });
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
  });
});
