// 7. cluster: ingest into one HTTP source on PostgreSQL with one `all` node, an api node and one worker, and an api
// node and two workers, beside the SQLite single node and a bare Fastify route; fan-out (each event to an SSE client
// and a webhook at a fixed rate) in the same setups beside a bare Node relay; and an event's trip from a request on
// one api node to an SSE client of another (cross-node), beside the same trip within one node.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import { loadgen } from './lib/client.mjs';
import { waitForCount } from './lib/events.mjs';
import { serverCpuDuring, watched } from './lib/machine.mjs';
import { cleanEnv, removeDir, spawnTracked, stopChild, tempDir, waitForOutput } from './lib/proc.mjs';
import { fanoutJob, fanoutThroughRelay, fanoutTimeout } from './fanout.mjs';
import { startBareFastify, startRelay } from './lib/servers.mjs';
import { openSse } from './lib/sse.mjs';
import { cpuPerEvent, int, p50p99, summarize } from './lib/stats.mjs';
import { row } from './lib/table.mjs';
import { apiClient, BIN, ROOT, startTributary } from './lib/tributary.mjs';

export const name = 'cluster';
export const summary = 'PostgreSQL: ingest and fan-out with 1 node, api + 1 worker, api + 2 workers; cross-node event → SSE latency';

const execFileP = promisify(execFile);
const ECHO = 'module.exports = { name: "bench-ingest", version: "1", props: { http: "$.interface.http" }, async run(e) { this.$emit(e.body) } }';
const SECRET = 'bench-cluster-secret';
const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A fresh database on the PostgreSQL server of BENCH_DATABASE_URL, dropped by `drop`. */
async function freshDatabase() {
  const dbName = `trb_bench_${process.pid}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`create database ${dbName}`);
  await admin.end();
  const url = new URL(ADMIN_URL);
  url.pathname = `/${dbName}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: ADMIN_URL });
      await client.connect();
      await client.query(`drop database if exists ${dbName} with (force)`);
      await client.end();
    },
  };
}

/** One `tributary serve --role <role>` node on the database; resolves once it says it runs. */
async function startNode(role, databaseUrl) {
  const dataDir = tempDir('tributary-bench-node-');
  // A worker listens on no port, and refuses --port.
  const port = role === 'worker' ? [] : ['--port', '0'];
  const args = [BIN, 'serve', ...port, '--role', role, '--data-dir', dataDir, '--database-url', databaseUrl, '--secret-key', SECRET];
  const flags = ['--log-level', 'warn', '--rate-limit', '0', '--event-retention', '10000000', '--allow-private-network'];
  const child = spawnTracked(process.execPath, [...args, ...flags], { cwd: ROOT });
  const [, url] = await waitForOutput(child, /listening at (http:\/\/\S+) |worker node is running/);
  return {
    url,
    pid: child.pid,
    role,
    /** The last 64 KiB of what the node printed (warnings and errors: the nodes log at `warn`). */
    output: () => child.outputTail(),
    async stop() {
      await stopChild(child);
      removeDir(dataDir);
    },
  };
}

/** Latencies past this are worth the nodes' own account of the run. */
const SLOW_MS = 1000;

/** After a fan-out with an event slower than SLOW_MS, prints what each node logged, so that the cause can be read. */
function logNodesIfSlow(label, result, nodes, log) {
  const slowest = Math.max(result.sse.max, result.webhook.max);
  if (!(slowest > SLOW_MS)) return;
  log(`${label}: an event took ${int(slowest)} ms; what the nodes logged:`);
  for (const node of nodes) {
    // split always yields one line at least: an empty first one means the node printed nothing.
    const lines = node.output().trim().split('\n').slice(-20);
    log(`  ${node.role} node ${node.pid}: ${lines[0] ? `\n    ${lines.join('\n    ')}` : 'nothing'}`);
  }
}

/** Nodes of the given roles on a fresh database, with an account whose key is returned. */
export async function startCluster(roles) {
  const database = await freshDatabase();
  const nodes = [];
  try {
    for (const role of roles) nodes.push(await startNode(role, database.url));
    const created = await execFileP(
      process.execPath,
      [BIN, 'users', 'create', '--username', 'bench', '--email', 'bench@example.test', '--plan', 'paid', '--json', '--database-url', database.url],
      { env: cleanEnv(), cwd: ROOT },
    );
    const key = JSON.parse(created.stdout.trim().split('\n').pop()).api_key;
    const front = nodes.find((n) => n.url);
    return {
      nodes,
      key,
      url: front.url,
      api: apiClient(front.url, key),
      async stop() {
        for (const node of nodes) await node.stop();
        await database.drop();
      },
    };
  } catch (error) {
    for (const node of nodes) await node.stop();
    await database.drop();
    throw error;
  }
}

/** Runs `work` and adds up the CPU every node (and its workers) used meanwhile, in ms. */
async function cpuOfNodes(pids, work) {
  let result;
  let cpuMs = 0;
  let measured = async () => {
    result = await work();
  };
  for (const pid of pids) {
    const inner = measured;
    measured = async () => {
      const [, ms] = await serverCpuDuring(pid, inner);
      cpuMs += ms;
    };
  }
  await measured();
  return [result, cpuMs];
}

/** Closed-loop load into a fresh echo source, then the wait until every acknowledged event is stored. */
async function ingest(cluster, cfg, pids) {
  const deployed = await cluster.api.ok('POST', '/v1/sources', { component_code: ECHO, name: 'ingest' });
  const job = { mode: 'closed', connections: cfg.connections, warmupMs: 0, durationMs: cfg.duration * 1000 };
  const started = Date.now();
  const [{ load, stored }, cpuMs] = await cpuOfNodes(pids, async () => {
    const [load] = await watched(() => loadgen({ ...job, url: `${deployed.data.configured_props.http.endpoint_url}/bench` }, cfg.duration * 1000 + 120_000));
    const stored = await waitForCount(cluster.api, deployed.data.id, load.acked, { timeoutMs: cfg.drainTimeout * 1000 });
    return { load, stored };
  });
  const seconds = (Date.now() - started) / 1000;
  return { acked: load.acked, rate: load.rate, stored, seconds, cpuMs, latency: load.latency };
}

/** The fan-out benchmark's load: a fixed rate into a fresh echo source, each event to an SSE client of the front node and a webhook. */
async function fanout(cluster, cfg, pids) {
  const deployed = await cluster.api.ok('POST', '/v1/sources', { component_code: ECHO, name: 'fanout' });
  const job = {
    ...fanoutJob(cfg),
    kind: 'tributary',
    baseUrl: cluster.url,
    key: cluster.key,
    sourceId: deployed.data.id,
    ingestUrl: `${deployed.data.configured_props.http.endpoint_url}/bench`,
  };
  const [[load, busy], cpuMs] = await cpuOfNodes(pids, () => watched(() => loadgen(job, fanoutTimeout(cfg))));
  return { ...load, busy, cpuMs };
}

/** Posts `count` events one at a time to `postUrl` and times each until it arrives on the SSE stream of `sseBase`. */
async function eventToSse(postBase, sseBase, key, sourceId, endpointPath, count) {
  const waiting = new Map();
  const latencies = [];
  const stream = await openSse(`${sseBase}/v1/sources/${sourceId}/sse`, { authorization: `Bearer ${key}` }, (data, arrived) => {
    const seq = JSON.parse(data).event?.seq;
    const sent = waiting.get(seq);
    if (sent === undefined) return;
    waiting.delete(seq);
    latencies.push(arrived - sent.at);
    sent.done();
  });
  try {
    for (let seq = 0; seq < count; seq++) {
      const arrived = new Promise((resolve) => waiting.set(seq, { at: performance.now(), done: resolve }));
      const answer = await fetch(`${postBase}${endpointPath}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ seq }),
      });
      await answer.arrayBuffer();
      await Promise.race([arrived, new Promise((_, reject) => setTimeout(() => reject(new Error(`event ${seq} did not reach the stream in 10 s`)), 10_000))]);
    }
  } finally {
    stream.close();
  }
  return { ...summarize(latencies.sort((a, b) => a - b)), count: latencies.length };
}

export async function run(cfg, log) {
  const results = {};
  const fanouts = {};
  const sqlite = await startTributary(['--event-retention', '10000000', '--allow-private-network']);
  try {
    log('sqlite single node: ingest');
    results.sqlite = await ingest({ api: sqlite.api }, cfg, [sqlite.pid]);
    log(`sqlite single node: fan-out at ${cfg.fanoutRate}/s`);
    fanouts.sqlite = await fanout({ api: sqlite.api, url: sqlite.url, key: sqlite.key }, cfg, [sqlite.pid]);
  } finally {
    await sqlite.stop();
  }
  for (const [label, roles] of [
    ['pg all', ['all']],
    ['pg api + 1 worker', ['api', 'worker']],
    ['pg api + 2 workers', ['api', 'worker', 'worker']],
  ]) {
    const cluster = await startCluster(roles);
    try {
      log(`${label}: ingest`);
      results[label] = await ingest(
        cluster,
        cfg,
        cluster.nodes.map((n) => n.pid),
      );
      log(`${label}: ${int(results[label].acked)} acknowledged, stored in ${results[label].seconds.toFixed(1)} s`);
      log(`${label}: fan-out at ${cfg.fanoutRate}/s`);
      fanouts[label] = await fanout(
        cluster,
        cfg,
        cluster.nodes.map((n) => n.pid),
      );
      logNodesIfSlow(label, fanouts[label], cluster.nodes, log);
    } finally {
      await cluster.stop();
    }
  }

  log('cross-node: event posted to one api node, read on the SSE stream of another');
  const cluster = await startCluster(['api', 'api', 'worker']);
  let crossNode;
  let sameNode;
  try {
    const deployed = await cluster.api.ok('POST', '/v1/sources', { component_code: ECHO, name: 'latency' });
    const [first, second] = cluster.nodes;
    const path = new URL(deployed.data.configured_props.http.endpoint_url).pathname;
    sameNode = await eventToSse(first.url, first.url, cluster.key, deployed.data.id, path, cfg.latencyRequests);
    crossNode = await eventToSse(first.url, second.url, cluster.key, deployed.data.id, path, cfg.latencyRequests);
  } finally {
    await cluster.stop();
  }

  const bare = await startBareFastify();
  let base;
  try {
    [base] = await watched(() =>
      loadgen(
        { mode: 'closed', connections: cfg.connections, warmupMs: 0, durationMs: cfg.duration * 1000, url: `${bare.url}/e/bench` },
        cfg.duration * 1000 + 60_000,
      ),
    );
  } finally {
    await bare.stop();
  }

  const [[relayed], relayCpuMs] = await fanoutThroughRelay(startRelay, 'bare Node relay', cfg, log);

  const rows = [];
  for (const [label, r] of Object.entries(results)) {
    rows.push(
      row(
        'cluster',
        `${label}: acknowledged/s and stored/s (${cfg.connections} conn., one source)`,
        `${int(r.rate)}/s acked, ${int(r.stored.count / r.seconds)}/s stored (${int(r.stored.count)} of ${int(r.acked)} stored); ${int((r.cpuMs * 1000) / Math.max(1, r.stored.count))} µs CPU/event, all nodes`,
        `bare Fastify ${int(base.rate)} requests/s`,
        '',
      ),
    );
  }
  const received = (summary, r) => `${int(summary.n)}/${int(r.measured)}`;
  for (const [label, r] of Object.entries(fanouts)) {
    rows.push(
      row(
        'cluster',
        `${label}: fan-out at ${cfg.fanoutRate}/s, SSE / webhook p50 / p99; CPU per event, all nodes`,
        `SSE ${p50p99(r.sse)} (${received(r.sse, r)}), webhook ${p50p99(r.webhook)} (${received(r.webhook, r)}); ${cpuPerEvent(r.cpuMs, r.acked)}${r.busy}`,
        `relay SSE ${p50p99(relayed.sse)}, webhook ${p50p99(relayed.webhook)}; ${cpuPerEvent(relayCpuMs, relayed.acked)}`,
        '',
      ),
    );
  }
  rows.push(
    row(
      'cluster',
      `event → SSE, another api node (${crossNode.count} events one at a time), p50 / p99`,
      p50p99(crossNode),
      `same node ${p50p99(sameNode)}`,
      '',
    ),
  );
  return rows;
}
