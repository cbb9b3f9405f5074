// 4. scale: many deployed sources (default 10,000, from one saved component, a timer of one day): time to deploy
// them, resident memory of the server and its worker processes while idle, latency of GET /v1/users/me/sources
// and of GET /v1/sources/{id}/event_summaries. Baselines: the same POSTs, RSS and GETs against bare Fastify.
import { loadgen } from './lib/client.mjs';
import { waitForCount } from './lib/events.mjs';
import { descendants, rssBytes } from './lib/proc.mjs';
import { startBareFastify } from './lib/servers.mjs';
import { int, mb, p50p99, sleep } from './lib/stats.mjs';
import { met, row } from './lib/table.mjs';
import { startTributary } from './lib/tributary.mjs';

export const name = 'scale';
export const summary = 'many deployed sources: deploy time, idle RSS of server + workers, list and event latency';

const IDLE = `module.exports = {
  name: "bench-idle", version: "1",
  props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 86400 } } },
  async run(event) { this.$emit({ ok: true, seq: event && event.seq }) },
}`;
const IDLE_WAIT_MS = 5000;
const TARGET_BYTES = 600 * 1024 * 1024;

/** RSS of a process and of each of its descendants. */
function memoryOf(pid) {
  const server = rssBytes(pid) ?? 0;
  const children = descendants(pid).map((p) => rssBytes(p) ?? 0);
  return { server, children: children.length, childrenBytes: children.reduce((a, b) => a + b, 0), total: server + children.reduce((a, b) => a + b, 0) };
}

/** The largest of a few samples, one second apart. */
async function idleMemory(pid, samples = 3) {
  let worst;
  for (let i = 0; i < samples; i++) {
    if (i) await sleep(1000);
    const m = memoryOf(pid);
    if (!worst || m.total > worst.total) worst = m;
  }
  return worst;
}

export async function run(cfg, log) {
  const count = cfg.scaleSources;
  const latencyJob = (url, headers) => ({ mode: 'concurrent', method: 'GET', url, headers, count: cfg.latencyRequests, warmup: 20, concurrency: 1 });
  const deployJob = (url, headers, bodies) => ({ mode: 'concurrent', method: 'POST', url, headers, bodies, count, concurrency: cfg.deployConcurrency });

  // One account holds them all: past the default limit of 10,000 sources when BENCH_SCALE_SOURCES asks for more.
  const server = await startTributary(['--account-limits', `sources=${Math.max(count, 10_000)}`]);
  let deploy;
  let memory;
  let list;
  let events;
  let eventCount;
  let bodies;
  try {
    const auth = { authorization: `Bearer ${server.key}` };
    const component = await server.api.ok('POST', '/v1/components', { component_code: IDLE });
    bodies = Array.from({ length: count }, (_, i) => JSON.stringify({ component_id: component.data.id, name: `idle-${i}` }));
    log(`tributary: deploying ${count} sources, ${cfg.deployConcurrency} at a time`);
    deploy = await loadgen({ ...deployJob(`${server.url}/v1/sources`, { ...auth, 'content-type': 'application/json' }, bodies), collectIds: true }, 900_000);
    if (deploy.ids.length !== count) {
      throw new Error(`deployed ${deploy.ids.length}/${count} sources: ${JSON.stringify(deploy.statuses)} ${deploy.firstErrors.join('; ')}`);
    }
    log(`tributary: deployed in ${(deploy.elapsedMs / 1000).toFixed(1)} s; idle for ${IDLE_WAIT_MS / 1000} s, then reading RSS`);
    await sleep(IDLE_WAIT_MS);
    memory = await idleMemory(server.pid);
    log(`tributary: server ${mb(memory.server)}, ${memory.children} workers ${mb(memory.childrenBytes)}`);

    list = await loadgen(latencyJob(`${server.url}/v1/users/me/sources`, auth));
    // Give one source 100 events, then time its event list.
    const sourceId = deploy.ids[0];
    for (let i = 0; i < 100; i++) await server.api.ok('POST', `/v1/sources/${sourceId}/run`, { seq: i });
    eventCount = (await waitForCount(server.api, sourceId, 100, { timeoutMs: 30_000 })).count;
    events = await loadgen(latencyJob(`${server.url}/v1/sources/${sourceId}/event_summaries`, auth));
  } finally {
    await server.stop();
  }

  const bare = await startBareFastify();
  let bareDeploy;
  let bareMemory;
  let bareGet;
  try {
    log('baseline: bare Fastify, same POSTs, then GETs, then idle RSS');
    bareDeploy = await loadgen(deployJob(`${bare.url}/v1/sources`, { 'content-type': 'application/json' }, bodies), 300_000);
    bareGet = await loadgen(latencyJob(`${bare.url}/v1/users/me/sources`, {}));
    await sleep(2000);
    bareMemory = await idleMemory(bare.pid);
  } finally {
    await bare.stop();
  }

  const secs = (r) => `${(r.elapsedMs / 1000).toFixed(1)} s (${int(count / (r.elapsedMs / 1000))}/s)`;
  return [
    row('scale', `deploy ${int(count)} sources (${cfg.deployConcurrency} in flight)`, secs(deploy), `${secs(bareDeploy)} bare Fastify POSTs`, ''),
    row(
      'scale',
      `idle RSS, ${int(count)} sources (server + workers)`,
      `${mb(memory.total)} (server ${mb(memory.server)} + ${memory.children} workers ${mb(memory.childrenBytes)})`,
      `${mb(bareMemory.total)} bare Fastify`,
      '≤ 600 MB',
      met(memory.total <= TARGET_BYTES),
    ),
    row('scale', 'GET /v1/users/me/sources p50 / p99', p50p99(list.latency), `${p50p99(bareGet.latency)} bare Fastify GET`, ''),
    row(
      'scale',
      `GET /v1/sources/{id}/event_summaries p50 / p99 (${int(eventCount)} events)`,
      p50p99(events.latency),
      `${p50p99(bareGet.latency)} bare Fastify GET`,
      '',
    ),
  ];
}
