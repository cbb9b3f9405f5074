// Small steps of a server's start: holding a free port from before anything starts, publishing the registry folder.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Logger } from 'pino';
import type { ComponentService } from '../services/components.js';

/** A free port held until `release()`, so that no other process (another node starting beside this one) takes it meanwhile. */
export interface ReservedPort {
  readonly port: number;
  /** Frees the port for the real listener; idempotent. */
  release(): Promise<void>;
}

export function reservePort(host: string): Promise<ReservedPort> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const { port } = server.address() as net.AddressInfo;
      // Holding the port must not keep a process alive whose start failed.
      server.unref();
      let released: Promise<void> | undefined;
      const release = () => (released ??= new Promise<void>((done) => server.close(() => done())));
      resolve({ port, release });
    });
  });
}

/** Publishes every component file in registry/ (skipping key and version pairs already published). */
export async function publishRegistry(components: ComponentService, logger: Logger, packageRoot: string): Promise<void> {
  const dir = path.join(packageRoot, 'registry');
  const files = fs.existsSync(dir)
    ? fs
        .readdirSync(dir)
        .filter((f) => /\.(m?js|cjs)$/.test(f))
        .sort()
    : [];
  for (const file of files) {
    const row = await components.publishToRegistry(fs.readFileSync(path.join(dir, file), 'utf8'), `registry/${file}`);
    logger.debug({ key: row.key, version: row.version }, 'registry component published');
  }
}
