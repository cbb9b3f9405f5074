// Child processes and temp dirs of a benchmark run: every one is tracked and removed on exit, also on failure.
import { spawn, fork } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const children = new Set();
const dirs = new Set();

/** Environment for children: ours without TRIBUTARY_* settings, so that only the flags we pass apply. */
export function cleanEnv(extra = {}) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TRIBUTARY_')) env[k] = v;
  return { ...env, ...extra };
}

export function tempDir(prefix = 'tributary-bench-') {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  dirs.add(dir);
  return dir;
}

export function removeDir(dir) {
  rmSync(dir, { recursive: true, force: true });
  dirs.delete(dir);
}

function track(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** Spawns a command with piped output; keeps the last 64 KiB of stdout+stderr for error reports. */
export function spawnTracked(command, args, options = {}) {
  const child = track(spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: cleanEnv(), ...options }));
  let tail = '';
  const keep = (chunk) => {
    tail += chunk.toString();
    if (tail.length > 65536) tail = tail.slice(-65536);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  child.outputTail = () => tail;
  return child;
}

/** Forks a Node script with an IPC channel. */
export function forkTracked(script, args = [], options = {}) {
  return track(fork(script, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env: cleanEnv(), ...options }));
}

/** Resolves with the first line of output that matches `pattern` (its match), rejects on exit or timeout. */
export function waitForOutput(child, pattern, timeoutMs = 30_000) {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk) => {
      seen += chunk.toString();
      const match = pattern.exec(seen);
      if (match) finish(null, match);
    };
    const onExit = (code, signal) => finish(new Error(`process exited (${code ?? signal}) before printing ${pattern}:\n${child.outputTail?.() ?? seen}`));
    const timer = setTimeout(() => finish(new Error(`no ${pattern} within ${timeoutMs} ms:\n${child.outputTail?.() ?? seen}`)), timeoutMs);
    function finish(error, match) {
      clearTimeout(timer);
      child.stdout.off('data', onData);
      child.off('exit', onExit);
      if (error) reject(error);
      else resolve(match);
    }
    child.stdout.on('data', onData);
    child.once('exit', onExit);
  });
}

/** Pids of every live descendant of `pid` (children, grandchildren, …), read from /proc/<pid>/stat. */
export function descendants(pid) {
  const parentOf = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name is in parentheses and may hold spaces: fields after the last ')' are fixed.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parentOf.set(Number(entry), Number(fields[1]));
    } catch {
      // The process ended while we looked.
    }
  }
  const out = [];
  const frontier = [pid];
  while (frontier.length) {
    const parent = frontier.pop();
    for (const [child, ppid] of parentOf) {
      if (ppid === parent) {
        out.push(child);
        frontier.push(child);
      }
    }
  }
  return out;
}

/** Resident memory of one process in bytes (VmRSS), or undefined when it is gone. */
export function rssBytes(pid) {
  try {
    const match = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

function killQuietly(pid, signal) {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}

/** Stops a child: `signal`, then SIGKILL after `graceMs`; its descendants (e.g. worker processes) are killed too. */
export async function stopChild(child, { signal = 'SIGTERM', graceMs = 10_000 } = {}) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const family = descendants(child.pid);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
  for (const pid of family) killQuietly(pid, 'SIGKILL');
}

/** Synchronous last resort (process exit): kills every tracked child and its descendants, removes temp dirs. */
export function cleanupAllSync() {
  for (const child of children) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const family = descendants(child.pid);
    killQuietly(child.pid, 'SIGKILL');
    for (const pid of family) killQuietly(pid, 'SIGKILL');
  }
  children.clear();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  dirs.clear();
}

/** Stops every tracked child gracefully (then by force) and removes temp dirs. */
export async function cleanupAll() {
  await Promise.all([...children].map((c) => stopChild(c, { graceMs: 5000 }).catch(() => {})));
  cleanupAllSync();
}

let installed = false;
/** Cleans up on exit, Ctrl-C and SIGTERM. */
export function installExitHandlers() {
  if (installed) return;
  installed = true;
  process.on('exit', cleanupAllSync);
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      process.stderr.write(`\n${signal}: stopping child processes\n`);
      cleanupAll().finally(() => process.exit(130));
    });
  }
}
