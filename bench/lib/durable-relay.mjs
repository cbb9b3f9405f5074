// Fan-out floor: the relay plus the least a durable event service does per event, by hand and with no framework.
// The request's queue row is committed before the 200; a child process "runs" it (one IPC round trip); one
// transaction stores the event and its delivery and deletes the queue row; then the SSE frame and a signed webhook
// POST, whose answer a third transaction records. What Tributary costs beyond this is its own.
import { fork } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';

const dir = mkdtempSync(path.join(os.tmpdir(), 'tributary-bench-floor-'));
const db = new Database(path.join(dir, 'floor.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec(`
  create table queue (id integer primary key, body text not null);
  create table events (id integer primary key, emitter text not null, body text not null);
  create table deliveries (id integer primary key, event_id integer not null, status integer, attempts integer not null default 0);
`);
const enqueue = db.prepare('insert into queue (body) values (?)');
const dequeue = db.prepare('delete from queue where id = ?');
const insertEvent = db.prepare('insert into events (emitter, body) values (?, ?)');
const insertDelivery = db.prepare('insert into deliveries (event_id) values (?)');
const recordAttempt = db.prepare('update deliveries set status = ?, attempts = attempts + 1 where id = ?');
const storeRun = db.transaction((queueId, body) => {
  dequeue.run(queueId);
  const eventId = insertEvent.run('dc_floor', body).lastInsertRowid;
  return insertDelivery.run(eventId).lastInsertRowid;
});

const sseClients = new Set();
let webhookUrl;
const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
const signingKey = Buffer.from('bench-floor-signing-key');

function deliver(body, deliveryId) {
  for (const res of sseClients) res.write(`data: ${body}\n\n`);
  if (!webhookUrl) return;
  const messageId = `msg_${deliveryId}`;
  const timestamp = String(Math.floor(Date.now() / 1000));
  const signature = createHmac('sha256', signingKey).update(`${messageId}.${timestamp}.${body}`).digest('base64');
  const headers = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'webhook-id': messageId,
    'webhook-timestamp': timestamp,
    'webhook-signature': `v1,${signature}`,
  };
  const req = http.request(webhookUrl, { method: 'POST', agent, headers });
  req.on('response', (res) => {
    res.resume();
    res.on('end', () => recordAttempt.run(res.statusCode, deliveryId));
  });
  req.on('error', () => recordAttempt.run(null, deliveryId));
  req.end(body);
}

const worker = fork(path.join(import.meta.dirname, 'durable-relay-worker.mjs'), [], { serialization: 'advanced' });
worker.on('message', ({ queueId, emitted }) => {
  const body = JSON.stringify(emitted);
  deliver(body, storeRun(queueId, body));
});

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
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":{"id":"wh_floor"}}');
    return;
  }
  if (req.method === 'POST' && url.pathname.startsWith('/e')) {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      const queueId = enqueue.run(body).lastInsertRowid;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"success":true}');
      worker.send({ queueId, body });
    });
    return;
  }
  res.writeHead(404).end();
});
server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', () => console.log(`durable relay listening at http://127.0.0.1:${server.address().port} `));
process.on('SIGTERM', () => {
  for (const res of sseClients) res.end();
  worker.kill();
  server.close(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  });
});
