// An HTTP server that counts requests per path and holds `/gate` unanswered until opened: a run stuck in a fetch of
// it is still running (holding its lease) for as long as a test needs.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Gatekeeper {
  url: string;
  hits: Map<string, number>;
  /** Answers the `/gate` requests held so far, and every later one at once. */
  open(): void;
  close(): Promise<void>;
}

/** Every path answers `{ path }`; `/gate` only once opened (a request held when the server closes is dropped). */
export async function startGatekeeper(): Promise<Gatekeeper> {
  const hits = new Map<string, number>();
  const held: http.ServerResponse[] = [];
  let holding = true;
  const answer = (res: http.ServerResponse, path: string) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ path }));
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (path === '/gate' && holding) held.push(res);
    else answer(res, path);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    open: () => {
      holding = false;
      for (const res of held.splice(0)) answer(res, '/gate');
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
