// Fan-out baseline: a bare Node HTTP server that forwards each POST /e body straight to its SSE clients
// (GET /sse) and to one webhook URL (set with POST /webhooks?url=…), then answers {"success":true}.
import http from 'node:http';
import { serveRelay } from './relay-server.mjs';

const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });

const relay = serveRelay('relay', (body, answer) => {
  for (const res of relay.sseClients) res.write(`data: ${body}\n\n`);
  if (relay.webhookUrl) {
    const req = http.request(relay.webhookUrl, {
      method: 'POST',
      agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('response', (res) => res.resume());
    req.on('error', () => {});
    req.end(body);
  }
  answer();
});
