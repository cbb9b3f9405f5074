// --host and --metrics-host: an empty value is refused rather than taken as every interface, and an IPv6 address works;
// a setting's variable set to nothing leaves an optional setting off, and never names the current folder as a key file.
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCli, startCli } from '../helpers/cli.js';
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

describe('settings set to nothing', () => {
  const env = { PATH: process.env.PATH ?? '' };

  it('an empty variable of a setting that is off unless given (TRIBUTARY_METRICS_PORT=) leaves it off', async () => {
    // serve stopped with 'error: options.port should be >= 0 and < 65536. Received type string ('')' (exit 1).
    const started = startCli(['serve', '--port', '0', '--log-level', 'silent', '--data-dir', tempDir()], {
      env: { ...env, TRIBUTARY_METRICS_PORT: '', TRIBUTARY_WORKER_CA_FILE: '', TRIBUTARY_SECRET_KEY: '' },
      cwd: tempDir(),
    });
    try {
      const [, url] = await started.waitForOutput(/is listening at (http:\/\/\S+) /);
      expect((await request('GET', `${url}/healthz`)).status).toBe(200);
      expect(started.stdout()).not.toContain('metrics:');
    } finally {
      started.child.kill('SIGTERM');
      expect(await started.exit).toBe(0);
    }
  });

  it('an empty --secret-key-file is refused, not taken as the folder serve runs in nor as a second key beside --secret-key', async () => {
    const stderr = 'error: --secret-key-file (TRIBUTARY_SECRET_KEY_FILE): expected the path of a key file, got an empty value\n';
    for (const [args, extra] of [
      [['--secret-key-file', ''], {}],
      [['--secret-key', 'k'], { TRIBUTARY_SECRET_KEY_FILE: '' }],
    ] as [string[], Record<string, string>][]) {
      const dataDir = tempDir();
      const result = await runCli(['serve', '--port', '0', '--log-level', 'silent', '--data-dir', dataDir, ...args], {
        env: { ...env, ...extra },
        cwd: tempDir(),
      });
      expect({ args, ...result }).toEqual({ args, code: 2, stdout: '', stderr });
      expect(fs.readdirSync(dataDir)).toEqual([]);
    }
  });
});
