// 5. overhead: a trivial component run through the queue and a warm worker, one run at a time: the time from
// POST /v1/sources/{id}/run to the run's event arriving on the source's SSE stream (enqueue, claim, worker
// round trip, commit, stream). Floor: the same run() called directly in a separate process.
import { baseline, loadgen } from './lib/client.mjs';
import { watched } from './lib/machine.mjs';
import { int, p50p99 } from './lib/stats.mjs';
import { startBareFastify } from './lib/servers.mjs';
import { row } from './lib/table.mjs';
import { startTributary } from './lib/tributary.mjs';

export const name = 'overhead';
export const summary = 'trivial run through the queue and a warm worker vs a direct function call';

const TRIVIAL = 'module.exports = { name: "bench-trivial", version: "1", props: {}, async run(event) { this.$emit(event) } }';

export async function run(cfg, log) {
  const server = await startTributary(['--event-retention', '100000']);
  let runs;
  let busy;
  try {
    const component = await server.api.ok('POST', '/v1/components', { component_code: TRIVIAL });
    const source = await server.api.ok('POST', '/v1/sources', { component_id: component.data.id, name: 'overhead' });
    log(`tributary: ${cfg.overheadRuns} sequential runs (after 50 to warm up)`);
    [runs, busy] = await watched(() =>
      loadgen({ mode: 'overhead', baseUrl: server.url, key: server.key, sourceId: source.data.id, runs: cfg.overheadRuns, warmup: 50 }),
    );
  } finally {
    await server.stop();
  }
  const bare = await startBareFastify();
  let http;
  try {
    log(`HTTP floor: ${cfg.overheadRuns} sequential POSTs into bare Fastify`);
    http = await loadgen({
      mode: 'concurrent',
      method: 'POST',
      url: `${bare.url}/v1/sources/x/run`,
      headers: { 'content-type': 'application/json' },
      body: '{"seq":0}',
      count: cfg.overheadRuns,
      warmup: 50,
      concurrency: 1,
    });
  } finally {
    await bare.stop();
  }
  log(`floor: ${int(cfg.directCalls)} direct calls of run() in a separate process`);
  const floor = await baseline({ mode: 'direct', code: TRIVIAL, calls: cfg.directCalls });
  const floorText = `${(floor.nsPerCall / 1000).toFixed(3)} µs/call direct`;
  if (!runs.available) {
    return [row('overhead', 'per run (request → event on SSE)', `not available (${runs.note})`, floorText, '', 'n/a')];
  }
  const issues = runs.lost || runs.firstError ? ` (${runs.lost} runs without event${runs.firstError ? `, ${runs.firstError}` : ''})` : '';
  return [
    row('overhead', 'per run: POST /run → event on SSE, p50 / p99', `${p50p99(runs.roundTrip)}${issues}${busy}`, floorText, ''),
    row(
      'overhead',
      'sequential runs per second (one at a time)',
      `${int(runs.perSecond)}/s (mean ${(runs.roundTrip.mean).toFixed(2)} ms = ${int((runs.roundTrip.mean * 1e6) / floor.nsPerCall)}× the floor)`,
      `${int(floor.perSecond)}/s direct`,
      '',
    ),
    row('overhead', 'of which POST /run acknowledged, p50 / p99', p50p99(runs.ack), `${p50p99(http.latency)} bare Fastify POST`, ''),
  ];
}
