// Logs: JSON lines unless standard output is a terminal or --log-format pretty says otherwise; request lines only at debug.
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/app.js';
import { prettyLine } from '../../src/cli/pretty-log.js';
import { BIN } from '../helpers/processes.js';
import { startTestServer, tempDir } from '../helpers/server.js';
import { request } from '../helpers/client.js';

const run = promisify(execFile);

/** Runs `serve` until it prints its banner, then stops it; returns what it wrote on standard output. */
function serveOutput(args: string[]): Promise<string> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--data-dir', tempDir(), ...args], { env: { PATH: process.env.PATH ?? '' } });
  let output = '';
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Tributary is listening at')) child.kill('SIGTERM');
    });
    child.once('exit', () => resolve(output));
    child.once('error', reject);
  });
}

describe('log format', () => {
  it('prints one readable line per entry: time, level, module, message, fields, then the stack of an error', () => {
    const time = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
    const line = prettyLine(
      JSON.stringify({
        level: 50,
        time,
        pid: 1,
        hostname: 'h',
        module: 'dispatcher',
        sourceId: 'dc_1',
        invocationIds: ['inv_1', 'inv_2'],
        err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at here' },
        msg: 'could not commit a batch',
      }),
      false,
    );
    expect(line).toBe(
      '03:04:05.678 ERROR [dispatcher] could not commit a batch sourceId=dc_1 invocationIds=["inv_1","inv_2"]\n    Error: boom\n        at here\n',
    );
    expect(prettyLine(JSON.stringify({ level: 30, time, msg: 'plain', note: 'two words' }), true)).toBe(
      '03:04:05.678 \u001b[32mINFO \u001b[0m plain note="two words"\n',
    );
    expect(prettyLine('not json', false)).toBe('not json\n');
  });

  it('serve writes JSON lines to a pipe by default, and pretty lines with --log-format pretty', async () => {
    const json = (await serveOutput(['--log-level', 'debug'])).split('\n').filter((l) => l.startsWith('{'));
    expect(json.length).toBeGreaterThan(0);
    for (const line of json) expect(JSON.parse(line)).toHaveProperty('level');

    const pretty = (await serveOutput(['--log-level', 'debug', '--log-format', 'pretty'])).split('\n');
    expect(pretty.filter((l) => l.startsWith('{'))).toEqual([]);
    expect(pretty.filter((l) => /^\d\d:\d\d:\d\d\.\d{3} (DEBUG|INFO ) /.test(l)).length).toBeGreaterThan(0);
  });

  it('refuses an unknown format with exit code 2', async () => {
    const error = await run(process.execPath, [BIN, 'serve', '--log-format', 'xml']).catch((e: { code: number; stderr: string }) => e);
    expect(error).toMatchObject({ code: 2 });
    expect((error as { stderr: string }).stderr).toContain('--log-format (TRIBUTARY_LOG_FORMAT): expected one of auto, json, pretty, got "xml"');
  });
});

describe('request lines', () => {
  for (const [level, expected] of [
    ['info', 0],
    ['debug', 2],
  ] as const) {
    it(`are ${expected ? '' : 'not '}written at ${level}`, async () => {
      const lines: { msg: string; reqId?: string }[] = [];
      const logger = createLogger({ logLevel: level }, { write: (line: string) => void lines.push(JSON.parse(line)) });
      const server = await startTestServer('sqlite', { logLevel: level }, { logger });
      try {
        const res = await request('GET', `${server.url}/healthz`, { headers: { 'x-request-id': 'probe-1' } });
        expect(res.status).toBe(200);
        await server.stop();
        const requestLines = lines.filter((l) => l.reqId === 'probe-1');
        expect(requestLines.map((l) => l.msg)).toEqual(expected ? ['incoming request', 'request completed'] : []);
      } finally {
        await server.destroy();
      }
    });
  }
});

describe('request lines at debug', () => {
  it('leave out the value of a credential a client put in the query string', async () => {
    const lines: { msg: string; reqId?: string; req?: { url: string } }[] = [];
    const logger = createLogger({ logLevel: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const server = await startTestServer('sqlite', { logLevel: 'debug' }, { logger });
    try {
      const { apiKey } = await server.createUser();
      const url = `/v1/users/me?limit=5&api_key=${apiKey}&access%5Ftoken=t0k3n&include=id&sig`;
      const res = await request('GET', `${server.url}${url}`, { headers: { 'x-request-id': 'probe-key' } });
      expect(res.status).toBe(401);
      await server.stop();
      const incoming = lines.filter((l) => l.reqId === 'probe-key' && l.msg === 'incoming request');
      expect(incoming.map((l) => l.req?.url)).toEqual(['/v1/users/me?limit=5&api_key=[redacted]&access%5Ftoken=[redacted]&include=id&sig']);
      expect(JSON.stringify(lines)).not.toContain(apiKey);
    } finally {
      await server.destroy();
    }
  });
});
