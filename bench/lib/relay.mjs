// Fan-out baseline: a bare Node HTTP server that forwards each POST /e body straight to its SSE clients
// (GET /sse) and to one webhook URL (set with POST /webhooks?url=…), then answers {"success":true}.
import http from 'node:http';

const sseClients = new Set();
let webhookUrl;
const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });

function forward(body) {
  for (const res of sseClients) res.write(`data: ${body}\n\n`);
  if (!webhookUrl) return;
  const req = http.request(webhookUrl, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
  req.on('response', (res) => res.resume());
  req.on('error', () => {});
  req.end(body);
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://relay');
  if (req.method === 'GET' && url.pathname === '/sse') {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    res.write(':handshake\n\n');
    sseClients.add(res);
    req.on('close', () => sseClients.delete(res));
    return;
  }
  if (req.method === 'POST' && url.pathname === '/webhooks') {
    webhookUrl = url.searchParams.get('url');
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":{"id":"wh_relay"}}');
    return;
  }
  if (req.method === 'POST' && url.pathname.startsWith('/e')) {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      forward(Buffer.concat(chunks).toString());
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"success":true}');
    });
    return;
  }
  res.writeHead(404).end();
});
server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', () => console.log(`relay listening at http://127.0.0.1:${server.address().port} `));
process.on('SIGTERM', () => {
  for (const res of sseClients) res.end();
  server.close(() => process.exit(0));
});
