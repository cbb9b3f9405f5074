// The HTTP side of both fan-out relays: SSE clients on GET /sse, the one webhook URL set by POST /webhooks?url=…,
// and each POST /e… body handed to `ingest` with the function that answers it {"success":true}.
import http from 'node:http';

/** Starts listening on a free port of 127.0.0.1 and prints `<name> listening at <url> `; SIGTERM ends it. */
export function serveRelay(name, ingest, { onStop = () => {} } = {}) {
  const relay = { sseClients: new Set(), webhookUrl: undefined };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://relay');
    if (req.method === 'GET' && url.pathname === '/sse') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
      res.write(':handshake\n\n');
      relay.sseClients.add(res);
      req.on('close', () => relay.sseClients.delete(res));
      return;
    }
    if (req.method === 'POST' && url.pathname === '/webhooks') {
      relay.webhookUrl = url.searchParams.get('url');
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":{"id":"wh_relay"}}');
      return;
    }
    if (req.method === 'POST' && url.pathname.startsWith('/e')) {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => ingest(Buffer.concat(chunks).toString(), () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"success":true}')));
      return;
    }
    res.writeHead(404).end();
  });
  server.keepAliveTimeout = 72_000;
  server.listen(0, '127.0.0.1', () => console.log(`${name} listening at http://127.0.0.1:${server.address().port} `));
  process.on('SIGTERM', () => {
    for (const res of relay.sseClients) res.end();
    server.close(() => {
      onStop();
      process.exit(0);
    });
  });
  return relay;
}
