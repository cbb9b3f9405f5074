// Runs one job in a fresh child process (the load generator, or a baseline script) and returns its result.
import path from 'node:path';
import { forkTracked, stopChild } from './proc.mjs';

const LOADGEN = path.join(import.meta.dirname, 'loadgen.mjs');
const BASELINES = path.join(import.meta.dirname, 'baselines.mjs');

export async function runJob(script, job, timeoutMs = 600_000) {
  const child = forkTracked(script);
  const what = `${path.basename(script)} (${job.mode})`;
  try {
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${what} did not finish within ${timeoutMs} ms`)), timeoutMs);
      child.once('message', (message) => {
        clearTimeout(timer);
        if (message.ok) resolve(message.result);
        else reject(new Error(`${what} failed: ${message.error}`));
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${what} exited with ${code} before answering`));
      });
      child.send(job);
    });
  } finally {
    await stopChild(child, { graceMs: 2000 });
  }
}

/** A job of the load generator (lib/loadgen.mjs), in its own process. */
export const loadgen = (job, timeoutMs) => runJob(LOADGEN, job, timeoutMs);
/** A job of the in-process floors (lib/baselines.mjs), in its own process. */
export const baseline = (job, timeoutMs) => runJob(BASELINES, job, timeoutMs);
