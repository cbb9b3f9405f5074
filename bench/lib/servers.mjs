// Baseline servers, each in its own process.
import path from 'node:path';
import { spawnTracked, stopChild, waitForOutput } from './proc.mjs';

async function startScript(file) {
  const child = spawnTracked(process.execPath, [path.join(import.meta.dirname, file)]);
  const [, url] = await waitForOutput(child, /listening at (http:\/\/\S+) /, 15_000);
  return { url, pid: child.pid, child, stop: () => stopChild(child, { graceMs: 3000 }) };
}

/** A bare Fastify app answering {"success":true} on every GET/POST path. */
export const startBareFastify = () => startScript('bare-fastify.mjs');
/** A bare Node HTTP server relaying POST /e bodies to SSE clients (GET /sse) and one webhook. */
export const startRelay = () => startScript('relay.mjs');
/** The relay plus a durable event service's least work per event (durable-relay.mjs): SQLite, a child process. */
export const startDurableRelay = () => startScript('durable-relay.mjs');
