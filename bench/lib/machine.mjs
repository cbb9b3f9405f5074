// Machine description and a watch on CPU used by processes outside this benchmark run (other work on the
// machine makes figures noisy; the run reports how much there was).
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { descendants } from './proc.mjs';

export function describeMachine() {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
  const model = /model name\s*:\s*(.+)/.exec(cpuinfo)?.[1] ?? os.cpus()[0]?.model ?? 'unknown';
  let distro = '';
  try {
    distro = /PRETTY_NAME="([^"]+)"/.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] ?? '';
  } catch {
    // not Linux-like
  }
  return `${os.availableParallelism()} CPUs (${model}), ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version}, ${distro || os.type()} (kernel ${os.release()})`;
}

/** Busy and total clock ticks of the whole machine. */
function machineTicks() {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , , , steal] = fields;
  // irq/softirq time (e.g. loopback networking) is not attributed to processes, so it is left out of both sides.
  return { busy: user + nice + system, steal: steal ?? 0, total: fields.reduce((a, b) => a + b, 0) };
}

/** utime + stime + cutime + cstime of one process (its own CPU and that of its reaped children), in ticks. */
function processTicks(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
  } catch {
    return 0;
  }
}

/** Clock ticks per second of /proc times (USER_HZ; 100 on Linux). */
const TICKS_PER_SECOND = 100;

/**
 * Measures the CPU that a server process and its descendants (worker processes) use while `work` runs, in
 * milliseconds. Less noisy than latency on a shared machine: it is what each request cost the server.
 */
export async function serverCpuDuring(pid, work) {
  const family = () => [pid, ...descendants(pid)].reduce((sum, p) => sum + processTicks(p), 0);
  const before = family();
  const result = await work();
  return [result, ((family() - before) * 1000) / TICKS_PER_SECOND];
}

/**
 * CPU used by this process tree so far, in ticks: a process's time counts in itself while it lives, then in
 * its parent's cutime/cstime once reaped, so the sum over the live tree only grows.
 */
function treeTicks() {
  let total = 0;
  for (const pid of [process.pid, ...descendants(process.pid)]) total += processTicks(pid);
  return total;
}

/**
 * Samples every `everyMs` the CPU used by the machine and by this process tree; stop() returns the CPU used by
 * everything else, as a share of the whole machine (100% = every core busy), mean and worst sample.
 */
export function watchForeignCpu(everyMs = 1000) {
  let last = machineTicks();
  let lastOurs = treeTicks();
  const shares = [];
  let stealTicks = 0;
  let totalTicks = 0;
  const sample = () => {
    const now = machineTicks();
    const ours = treeTicks();
    const total = now.total - last.total;
    if (total > 0) {
      shares.push(Math.max(0, now.busy - last.busy - (ours - lastOurs)) / total);
      stealTicks += now.steal - last.steal;
      totalTicks += total;
    }
    last = now;
    lastOurs = ours;
  };
  const timer = setInterval(sample, everyMs);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      sample();
      const mean = shares.length ? shares.reduce((a, b) => a + b, 0) / shares.length : 0;
      return { mean, max: shares.length ? Math.max(...shares) : 0, steal: totalTicks ? stealTicks / totalTicks : 0 };
    },
  };
}

/** Waits (at most `maxSeconds`) until other processes use under `threshold` of the CPU for 3 s in a row. */
export async function waitForQuiet(maxSeconds, threshold = 0.15, log = () => {}) {
  const deadline = Date.now() + maxSeconds * 1000;
  for (;;) {
    const watch = watchForeignCpu(500);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const cpu = watch.stop();
    if (cpu.max < threshold) return true;
    if (Date.now() >= deadline) {
      log(`machine still busy after ${maxSeconds} s (other processes: ${(cpu.mean * 100).toFixed(0)}% CPU); going ahead`);
      return false;
    }
    log(`waiting for a quiet machine (other processes: ${(cpu.mean * 100).toFixed(0)}% CPU)`);
  }
}

/** Share of the machine's CPU used by other processes above which a figure is flagged as taken on a busy machine. */
export const BUSY_THRESHOLD = 0.1;

/** Runs `work` while watching the CPU of other processes; returns [result, flag] where flag is '' or a warning. */
export async function watched(work) {
  const watch = watchForeignCpu();
  let cpu;
  try {
    return [await work(), busyFlag((cpu = watch.stop()))];
  } finally {
    if (!cpu) watch.stop();
  }
}

export function busyFlag(cpu) {
  return cpu.mean > BUSY_THRESHOLD ? ` [busy machine: others used ${(cpu.mean * 100).toFixed(0)}% CPU]` : '';
}
