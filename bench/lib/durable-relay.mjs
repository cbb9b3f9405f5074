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
import { openSqliteFile } from '../../dist/store/sqlite-file.js';
import { serveRelay } from './relay-server.mjs';

const dir = mkdtempSync(path.join(os.tmpdir(), 'tributary-bench-floor-'));
const db = openSqliteFile(path.join(dir, 'floor.db'));
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

const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
const signingKey = Buffer.from('bench-floor-signing-key');

function deliver(body, deliveryId) {
  for (const res of relay.sseClients) res.write(`data: ${body}\n\n`);
  if (!relay.webhookUrl) return;
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
  const req = http.request(relay.webhookUrl, { method: 'POST', agent, headers });
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

const relay = serveRelay(
  'durable relay',
  (body, answer) => {
    const queueId = enqueue.run(body).lastInsertRowid;
    answer();
    worker.send({ queueId, body });
  },
  {
    onStop: () => {
      worker.kill();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  },
);
