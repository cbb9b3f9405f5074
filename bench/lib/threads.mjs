// CPU time of each thread of the server under test, its worker processes and the load generator, read from
// /proc/<pid>/task/*/stat, and the report the probes print from two snapshots of it.
import { readFileSync, readdirSync } from 'node:fs';
import { descendants } from './proc.mjs';

/** Clock ticks per second of /proc's utime and stime (USER_HZ, 100 on Linux). */
const TICKS = 100;

/** CPU milliseconds (user, system) of each thread of `pid`, keyed by `role:thread:user|sys`. */
function threadTimes(pid, role) {
  const times = {};
  let tids = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    // The process ended between listing it and reading it (a worker process recycled).
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const thread = tid === String(pid) ? 'main' : `thread ${tid}`;
      times[`${role} ${thread} user`] = (Number(fields[11]) * 1000) / TICKS;
      times[`${role} ${thread} sys`] = (Number(fields[12]) * 1000) / TICKS;
    } catch {
      // The thread ended while we looked.
    }
  }
  return times;
}

/** Every thread's CPU time now: the server's, its descendants' (worker processes) and the other named processes'. */
export function snapshotThreads(serverPid, others = {}) {
  const times = threadTimes(serverPid, 'server');
  for (const [role, pid] of Object.entries(others)) Object.assign(times, threadTimes(pid, role));
  descendants(serverPid).forEach((pid, i) => Object.assign(times, threadTimes(pid, `worker ${i + 1}`)));
  return times;
}

/** Prints each thread's CPU per unit of work (`unit`: request, event) between two snapshots, and the total. */
export function printThreadUse(before, after, seconds, units, unit) {
  let total = 0;
  for (const [key, ms] of Object.entries(after)) {
    const used = ms - (before[key] ?? 0);
    total += used;
    // Threads under 1% of a CPU (V8's and libuv's helpers at rest) are summed, not listed.
    if (used / seconds >= 10)
      console.log(
        `${key.padEnd(36)} ${((used * 1000) / units).toFixed(1).padStart(7)} µs/${unit} ${((used / seconds) * 0.1).toFixed(0).padStart(4)}% of a CPU`,
      );
  }
  console.log(
    `${'all'.padEnd(36)} ${((total * 1000) / units).toFixed(1).padStart(7)} µs/${unit} ${((total / seconds) * 0.1).toFixed(0).padStart(4)}% of a CPU`,
  );
}
