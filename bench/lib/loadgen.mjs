// The load generator: a child process of the benchmark run (never the server's process). It gets one job over
// IPC, runs it against 127.0.0.1, answers { ok, result } and exits. Every loop is bounded in count and time.
import http from 'node:http';
import { Client, Pool } from 'undici';
import { openSse } from './sse.mjs';
import { summarize } from './stats.mjs';
import { answerOneJob } from './job.mjs';

const now = () => performance.now();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A growable bitmap of sequence numbers. */
class SeqSet {
  bits = new Uint8Array(1 << 17);
  size = 0;
  add(seq) {
    const byte = seq >> 3;
    if (byte >= this.bits.length) {
      const grown = new Uint8Array(Math.max(this.bits.length * 2, byte + 1));
      grown.set(this.bits);
      this.bits = grown;
    }
    const mask = 1 << (seq & 7);
    if (!(this.bits[byte] & mask)) this.size++;
    this.bits[byte] |= mask;
  }
}

/**
 * Closed loop: `connections` connections, each sending the next request as soon as the previous answered,
 * for warmupMs + durationMs; then no new requests, and the ones in flight are awaited (so every request
 * ends acknowledged or not). Body: {"seq":<unique n>}. Throughput and latency count the requests that
 * started after the warm-up and finished within the window.
 */
async function closed({ url, connections, warmupMs, durationMs }) {
  const target = new URL(url);
  const path = target.pathname + target.search;
  const clients = Array.from({ length: connections }, () => new Client(target.origin, { pipelining: 1, keepAliveTimeout: 120_000 }));
  const acked = new SeqSet();
  const latencies = [];
  let seq = 0;
  let non2xx = 0;
  let errors = 0;
  let windowOk = 0;
  let windowNon2xx = 0;
  let firstError;
  const start = now();
  const windowStart = start + warmupMs;
  const windowEnd = windowStart + durationMs;
  const loop = async (client) => {
    while (now() < windowEnd) {
      const mine = seq++;
      const sent = now();
      try {
        const res = await client.request({ path, method: 'POST', headers: { 'content-type': 'application/json' }, body: `{"seq":${mine}}` });
        await res.body.dump();
        const done = now();
        const ok = res.statusCode >= 200 && res.statusCode < 300;
        if (ok) acked.add(mine);
        else {
          non2xx++;
          firstError ??= `HTTP ${res.statusCode}`;
        }
        if (sent >= windowStart && done <= windowEnd) {
          if (ok) {
            windowOk++;
            latencies.push(done - sent);
          } else windowNon2xx++;
        }
      } catch (error) {
        errors++;
        firstError ??= String(error?.message ?? error);
        await sleep(10);
      }
    }
  };
  await Promise.all(clients.map(loop));
  await Promise.all(clients.map((c) => c.close()));
  return {
    sent: seq,
    acked: acked.size,
    ackedBitmap: Buffer.from(acked.bits.buffer, 0, Math.ceil(seq / 8)).toString('base64'),
    non2xx,
    errors,
    firstError,
    windowOk,
    windowNon2xx,
    windowMs: durationMs,
    rate: windowOk / (durationMs / 1000),
    latency: summarize(latencies),
  };
}

/**
 * `count` requests (after `warmup` unmeasured ones), at most `concurrency` in flight; the body of request i is
 * bodies[i % bodies.length] (or `body`). Collects `data.id` of 2xx JSON answers when collectIds is set.
 */
async function concurrent({ method, url, headers = {}, body, bodies, count, concurrency = 1, warmup = 0, collectIds = false, timeoutMs = 600_000 }) {
  const target = new URL(url);
  const path = target.pathname + target.search;
  const pool = new Pool(target.origin, { connections: concurrency, pipelining: 1, keepAliveTimeout: 120_000 });
  const statuses = {};
  const latencies = [];
  const ids = [];
  const firstErrors = [];
  const deadline = now() + timeoutMs;
  let next = 0;
  let measuredStart;
  const one = async (i) => {
    const payload = bodies ? bodies[i % bodies.length] : body;
    const sent = now();
    try {
      const res = await pool.request({ path, method, headers, body: payload });
      const text = await res.body.text();
      const done = now();
      statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
      if (i >= warmup) latencies.push(done - sent);
      if (res.statusCode >= 200 && res.statusCode < 300) {
        if (collectIds) ids.push(JSON.parse(text).data.id);
      } else if (firstErrors.length < 3) firstErrors.push(`${res.statusCode} ${text.slice(0, 300)}`);
    } catch (error) {
      statuses.error = (statuses.error ?? 0) + 1;
      if (firstErrors.length < 3) firstErrors.push(String(error?.message ?? error));
    }
  };
  const worker = async () => {
    while (next < warmup + count && now() < deadline) {
      const i = next++;
      if (i === warmup) measuredStart = now();
      await one(i);
    }
  };
  if (warmup === 0) measuredStart = now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsedMs = now() - (measuredStart ?? now());
  await pool.close();
  return { elapsedMs, done: next, statuses, latency: summarize(latencies), ids, firstErrors, timedOut: now() >= deadline };
}

/** A local webhook receiver: resolves with { url, close }; calls onBody(text, arrivedAt) for every POST. */
function webhookReceiver(onBody) {
  return new Promise((resolve) => {
    const server = http.createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const arrived = now();
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
        onBody(Buffer.concat(chunks).toString(), arrived);
      });
    });
    server.keepAliveTimeout = 120_000;
    server.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${server.address().port}/hook`, close: () => new Promise((r) => server.close(r)), server }),
    );
  });
}

/**
 * Fixed-rate fan-out: POSTs {"seq","t"} to `ingestUrl` at `rate` per second (open loop, t = send time), and
 * measures the arrival of each at an SSE client and at a local webhook receiver.
 * kind "tributary": webhook + subscription via the API, SSE at /sources/{id}/sse; kind "relay": the baseline.
 */
async function fanout({ kind, baseUrl, key, sourceId, ingestUrl, rate, warmupMs, durationMs, graceMs = 5000, paths = ['sse', 'webhook'] }) {
  const auth = key ? { authorization: `Bearer ${key}` } : {};
  const sseLatency = new Map();
  const webhookLatency = new Map();
  const extract = (text) => {
    const parsed = JSON.parse(text);
    return kind === 'tributary' ? parsed.event : parsed;
  };
  const record = (into) => (text, arrived) => {
    try {
      const body = extract(text);
      if (body && typeof body.seq === 'number' && !into.has(body.seq)) into.set(body.seq, arrived - body.t);
    } catch {
      // Not one of ours.
    }
  };
  const receiver = await webhookReceiver(record(webhookLatency));
  const notes = [];
  let webhookAvailable = paths.includes('webhook');
  const post = async (path) => {
    const res = await fetch(`${baseUrl}${path}`, { method: 'POST', headers: auth });
    const text = await res.text();
    return { status: res.status, text };
  };
  if (!webhookAvailable) notes.push('webhook path not measured');
  else if (kind === 'tributary') {
    const q = new URLSearchParams({ url: receiver.url, name: 'bench-receiver', description: 'fan-out benchmark' });
    const wh = await post(`/v1/webhooks?${q}`);
    if (wh.status !== 200) {
      webhookAvailable = false;
      notes.push(`POST /v1/webhooks answered ${wh.status}: ${wh.text.slice(0, 200)}`);
    } else {
      const whId = JSON.parse(wh.text).data.id;
      const sub = await post(`/v1/subscriptions?${new URLSearchParams({ emitter_id: sourceId, listener_id: whId })}`);
      if (sub.status !== 200) {
        webhookAvailable = false;
        notes.push(`POST /v1/subscriptions answered ${sub.status}: ${sub.text.slice(0, 200)}`);
      }
    }
  } else {
    const wh = await post(`/webhooks?${new URLSearchParams({ url: receiver.url })}`);
    if (wh.status !== 200) throw new Error(`relay refused the webhook: ${wh.status}`);
  }
  const sseUrl = kind === 'tributary' ? `${baseUrl}/sources/${sourceId}/sse` : `${baseUrl}/sse`;
  let sse = { status: 'not measured', close() {} };
  const sseWanted = paths.includes('sse');
  try {
    if (paths.includes('sse')) sse = await openSse(sseUrl, auth, record(sseLatency));
  } catch (error) {
    sse = { status: `error ${error.message}`, close() {} };
  }
  const sseAvailable = sse.status === 200;
  if (!sseWanted) notes.push('SSE path not measured');
  else if (!sseAvailable) notes.push(`GET ${new URL(sseUrl).pathname} answered ${sse.status}`);
  await sleep(300);

  const target = new URL(ingestUrl);
  const path = target.pathname + target.search;
  const pool = new Pool(target.origin, { connections: 16, pipelining: 1, keepAliveTimeout: 120_000 });
  const total = Math.round((rate * (warmupMs + durationMs)) / 1000);
  const firstMeasured = Math.round((rate * warmupMs) / 1000);
  const ackLatency = [];
  let acked = 0;
  let failed = 0;
  let firstError;
  const inflight = new Set();
  const send = (seq) => {
    const t = now();
    const p = pool
      .request({ path, method: 'POST', headers: { 'content-type': 'application/json' }, body: `{"seq":${seq},"t":${t}}` })
      .then(async (res) => {
        await res.body.dump();
        if (res.statusCode >= 200 && res.statusCode < 300) {
          acked++;
          if (seq >= firstMeasured) ackLatency.push(now() - t);
        } else {
          failed++;
          firstError ??= `HTTP ${res.statusCode}`;
        }
      })
      .catch((error) => {
        failed++;
        firstError ??= String(error?.message ?? error);
      })
      .finally(() => inflight.delete(p));
    inflight.add(p);
  };
  const start = now();
  let sent = 0;
  const hardStop = start + warmupMs + durationMs + 30_000;
  while (sent < total && now() < hardStop) {
    const due = Math.min(total, Math.floor(((now() - start) * rate) / 1000) + 1);
    while (sent < due) send(sent++);
    await sleep(1);
  }
  const sendingMs = now() - start;
  await Promise.race([Promise.all([...inflight]), sleep(15_000)]);
  // Wait for stragglers: until every measured event arrived on both paths, or graceMs.
  const measured = total - firstMeasured;
  const complete = () => (!sseAvailable || sseLatency.size >= total) && (!webhookAvailable || webhookLatency.size >= total);
  const graceEnd = now() + graceMs;
  while (!complete() && now() < graceEnd) await sleep(20);
  sse.close();
  await pool.close();
  receiver.server.closeAllConnections?.();
  await receiver.close();
  const pick = (map) => [...map].filter(([seq]) => seq >= firstMeasured).map(([, v]) => v);
  const pickWarmUp = (map) => [...map].filter(([seq]) => seq < firstMeasured).map(([, v]) => v);
  return {
    rate,
    sent,
    measured,
    sendingMs,
    achievedRate: (sent / sendingMs) * 1000,
    acked,
    failed,
    firstError,
    ack: summarize(ackLatency),
    sseAvailable,
    webhookAvailable,
    sse: summarize(pick(sseLatency)),
    webhook: summarize(pick(webhookLatency)),
    warmUpSse: summarize(pickWarmUp(sseLatency)),
    warmUpWebhook: summarize(pickWarmUp(webhookLatency)),
    notes,
  };
}

/**
 * Per-run cost: `runs` sequential manual runs (POST /v1/sources/{id}/run with {"seq"}), each timed from the
 * request to its event arriving on the source's SSE stream (the event is committed before it is streamed).
 */
async function overhead({ baseUrl, key, sourceId, runs, warmup, timeoutMs = 120_000 }) {
  const auth = { authorization: `Bearer ${key}` };
  const waiters = new Map();
  const sse = await openSse(`${baseUrl}/sources/${sourceId}/sse`, auth, (text, arrived) => {
    try {
      const seq = JSON.parse(text).event?.seq;
      waiters.get(seq)?.(arrived);
    } catch {
      // ignore
    }
  });
  if (sse.status !== 200) return { available: false, note: `GET /sources/{id}/sse answered ${sse.status}` };
  await sleep(200);
  const pool = new Pool(baseUrl, { connections: 1, pipelining: 1, keepAliveTimeout: 120_000 });
  const roundTrip = [];
  const ack = [];
  let lost = 0;
  let firstError;
  const deadline = now() + timeoutMs;
  let measuredStart;
  let done = 0;
  for (let i = 0; i < warmup + runs && now() < deadline; i++) {
    if (i === warmup) measuredStart = now();
    const arrived = new Promise((resolve) => {
      const timer = setTimeout(() => resolve(undefined), 10_000);
      waiters.set(i, (t) => {
        clearTimeout(timer);
        resolve(t);
      });
    });
    const t0 = now();
    const res = await pool.request({
      path: `/v1/sources/${sourceId}/run`,
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: `{"seq":${i}}`,
    });
    await res.body.dump();
    const t1 = now();
    if (res.statusCode !== 202 && res.statusCode !== 200) {
      firstError ??= `POST /run answered ${res.statusCode}`;
      waiters.delete(i);
      continue;
    }
    const t2 = await arrived;
    waiters.delete(i);
    if (t2 === undefined) {
      lost++;
      continue;
    }
    if (i >= warmup) {
      ack.push(t1 - t0);
      roundTrip.push(t2 - t0);
      done++;
    }
  }
  const elapsedMs = now() - (measuredStart ?? now());
  sse.close();
  await pool.close();
  return {
    available: true,
    runs: done,
    lost,
    firstError,
    elapsedMs,
    perSecond: (done / elapsedMs) * 1000,
    ack: summarize(ack),
    roundTrip: summarize(roundTrip),
  };
}

answerOneJob({ closed, concurrent, fanout, overhead });
