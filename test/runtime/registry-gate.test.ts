// npm installs reach the registry through the operator's proxy when one is configured, as before the install gate.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Npm } from '../../src/runtime/npm.js';
import { tempDir } from '../helpers/server.js';

const logger = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };

describe('npm install gate', () => {
  /** An operator's forward proxy: tunnels what it is asked (CONNECT host:port), and remembers it. */
  let proxy: http.Server;
  const asked: string[] = [];
  const previous = process.env.npm_config_https_proxy;
  beforeAll(async () => {
    proxy = http.createServer((_req, res) => res.writeHead(405).end());
    proxy.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
      asked.push(String(req.url));
      const [host, port] = String(req.url).split(':');
      const remote = net.connect(Number(port), host, () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        remote.write(head);
        client.pipe(remote).pipe(client);
      });
      remote.on('error', () => client.destroy());
      client.on('error', () => remote.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    process.env.npm_config_https_proxy = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    if (previous === undefined) delete process.env.npm_config_https_proxy;
    else process.env.npm_config_https_proxy = previous;
    proxy.closeAllConnections();
    await new Promise((resolve) => proxy.close(resolve));
  });

  it("installs from the registry through the operator's proxy", async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'gate-test', private: true }));
    const npm = new Npm(tempDir(), tempDir(), logger);
    await npm.install('is-number@7.0.0', dir);
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', 'is-number', 'package.json'), 'utf8')).version).toBe('7.0.0');
    expect(new Set(asked)).toEqual(new Set(['registry.npmjs.org:443']));
  });
});
