// Takes from component code the process powers the permission model leaves it: the IPC channel, signalling other processes.
import asyncHooks from 'node:async_hooks';
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import os from 'node:os';
import traceEvents from 'node:trace_events';
import v8 from 'node:v8';
import { channelWriter } from './channel-writer.js';
import { sealHeapInspection } from './seal-heap.js';

/** What the server reads on stderr to tell a component's `process.exit` from a crash. */
export const EXIT_MARKER = 'tributary-worker: process.exit';

/** Sends a message object, or the JSON text of one (see OutcomesMessage). */
export type Send = (message: object | string) => void;

export interface WorkerChannel {
  send: Send;
  /** Exits without the marker: for the worker's own faults. */
  exit(code: number): never;
}

/**
 * Must run before any component code. Returns the only way left to talk to the server: libraries that
 * find `process.send` (process managers' "ready" signals) would otherwise speak our protocol by accident.
 */
export function harden(): WorkerChannel {
  if (typeof process.send !== 'function') throw new Error('the worker must be started with an IPC channel');
  const proc = process as unknown as Record<string, unknown>;
  const rawExit = process.exit.bind(process);
  // The worker writes its frames to the channel's descriptor itself (channel-writer.ts); Node's channel only reads.
  // Neither `process.send` nor `_send` (which it looks up on each call) is left: libraries that find them would
  // speak our protocol by accident, and code that replaced `_send` would see and forge our messages.
  const send: Send = channelWriter((process.channel as unknown as { fd: number }).fd, () => rawExit(0));
  proc.send = undefined;
  proc._send = undefined;
  proc.disconnect = undefined;

  // Root or not, a worker may not signal the server or other workers (pid 0 would mean the server's whole
  // process group); it may still signal itself. `process.kill` looks `_kill` up on each call.
  const ownPids = new Set([0, process.pid]);
  const rawKill = proc._kill as (pid: number, signal: number) => number;
  proc._kill = (pid: number, signal: number) => (ownPids.has(Number(pid)) ? rawKill.call(process, process.pid, signal) : -os.constants.errno.EPERM);
  // `_debugProcess(pid)` sends SIGUSR1 without `_kill`: it would open the inspector of a Node process (the server's,
  // with its environment and key) on 127.0.0.1, and end any other process that does not handle the signal.
  const rawDebugProcess = proc._debugProcess as (pid: number) => void;
  proc._debugProcess = (pid: number) => {
    if (!ownPids.has(Number(pid))) throw Object.assign(new Error('_debugProcess: own process only'), { code: 'EPERM' });
    return rawDebugProcess.call(process, process.pid);
  };
  const rawSetPriority = os.setPriority;
  os.setPriority = ((pidOrPriority: number, priority?: number) => {
    const [pid, value] = priority === undefined ? [0, pidOrPriority] : [pidOrPriority, priority];
    if (!ownPids.has(Number(pid))) throw Object.assign(new Error('setPriority: own process only'), { code: 'EPERM' });
    // The server starts workers at --worker-nice so that they never starve it; as root, code could undo that.
    if (Number(value) < os.getPriority(0)) throw Object.assign(new Error('setPriority: may only lower its own priority'), { code: 'EPERM' });
    return rawSetPriority(0, value);
  }) as typeof os.setPriority;

  // What the shell a worker starts through (worker-process.ts) adds to the environment the server built.
  for (const name of ['PWD', 'OLDPWD', 'SHLVL', '_']) delete process.env[name];

  sealChannelPath();
  sealHeapInspection();
  // The permission model does not cover trace files: Node writes them to the working folder (Tributary's own code,
  // shared by every account), as large as the code likes.
  Object.defineProperty(traceEvents, 'createTracing', {
    value: () => {
      throw Object.assign(new Error('trace_events.createTracing is not available to components'), { code: 'ERR_ACCESS_DENIED' });
    },
    writable: false,
    configurable: false,
    enumerable: true,
  });
  syncBuiltinESMExports();

  process.exit = ((code?: number | string | null) => {
    const shown = code ?? process.exitCode ?? 0;
    try {
      fs.writeSync(2, `\n${EXIT_MARKER}(${String(shown)})\n`);
    } catch {
      // stderr closed: the exit is reported as a crash instead.
    }
    return rawExit(code ?? undefined);
  }) as typeof process.exit;
  return { send, exit: rawExit };
}

/**
 * Every message (and the token beside it) passes through the V8 serializer and, as a Buffer, through a typed
 * array's `length` and `byteLength` on its way out (channel-writer.ts, and `fs.writeSync` in it); Node's own channel
 * used `set` too. Those are pinned where component code could patch or shadow them (the serializer classes whole;
 * the accessors and `set` on the typed-array prototypes Buffers inherit from), so the token cannot be read on the
 * way. Freezing the whole Buffer prototype would pin them too, but puts it in V8's slow dictionary mode: 4 µs more
 * worker CPU per event in the ingest benchmark. Async hooks would hand component code the requests of Node's own
 * channel, which hold what they carry, so they are not available to components either.
 */
function sealChannelPath(): void {
  // The pipe handle itself is out of reach: `process.channel` is a wrapper that keeps it in a private field.
  for (const target of [v8.Serializer, v8.Serializer.prototype, v8.DefaultSerializer, v8.DefaultSerializer.prototype]) Object.freeze(target);
  const typedArray = Object.getPrototypeOf(Uint8Array.prototype) as object;
  const set = Object.getOwnPropertyDescriptor(typedArray, 'set')!;
  const length = Object.getOwnPropertyDescriptor(typedArray, 'length')!;
  const byteLength = Object.getOwnPropertyDescriptor(typedArray, 'byteLength')!;
  for (const target of [typedArray, Uint8Array.prototype, Buffer.prototype]) {
    Object.defineProperty(target, 'set', { ...set, writable: false, configurable: false });
    Object.defineProperty(target, 'length', { ...length, configurable: false });
    Object.defineProperty(target, 'byteLength', { ...byteLength, configurable: false });
  }
  Object.defineProperty(asyncHooks, 'createHook', {
    value: () => {
      throw Object.assign(new Error('async_hooks.createHook is not available to components'), { code: 'ERR_ACCESS_DENIED' });
    },
    writable: false,
    configurable: false,
  });
}
