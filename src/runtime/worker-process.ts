// The server's handle on one worker process: started locked down, one call at a time, and a typed reason when it dies.
import { randomBytes } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { WorkerExitError, type WorkerExitReason } from './errors.js';
import { crashMessage } from './crash-message.js';
import { CpuClock, residentBytes } from './process-usage.js';
import { packageRoot, workerEntry } from './locations.js';
import type { RuntimeLogger } from './options.js';
import type { EgressPolicy } from './worker/egress-rules.js';
import type { WorkerUser } from './worker-user.js';
import { type FromWorker, type InitMessage, ProtocolError, parseFromWorker, type ToWorker } from './protocol.js';
import { EXIT_MARKER } from './worker/harden.js';
import { readFrames, tokenPrefix, writeFrame } from './worker-channel.js';
import { StrayErrors, type StrayErrorListener } from './stray-errors.js';
import { WorkerStderr } from './worker-stderr.js';

export interface WorkerSpec {
  accountId: string;
  /** Every folder or file the worker may read; nothing else is readable and nothing is writable. */
  allowRead: string[];
  memoryMb: number;
  /** Where component code may connect; the worker enforces it on every socket it opens. */
  egress: EgressPolicy;
  /** PEM file of certificate authorities the worker's TLS trusts beside the well-known roots; it must be in allowRead. */
  extraCaFile: string | undefined;
  /** The operating-system user the process runs as; undefined: the server's. */
  user: WorkerUser | undefined;
  /** Scheduling niceness, 0 to 19. */
  nice: number;
  startTimeoutMs: number;
  logger: RuntimeLogger;
  /** Called once when the process has gone, whatever the cause. */
  onExit(worker: WorkerProcess): void;
  onStrayError?: StrayErrorListener | undefined;
}

/** Receives each message of the call; returns true on the message that completes it. Throws ProtocolError to kill the worker. */
export type CallHandler = (message: FromWorker) => boolean;

interface PendingCall {
  id: number | undefined;
  handle: CallHandler;
  resolve(): void;
  reject(error: WorkerExitError): void;
  timer?: NodeJS.Timeout;
}

/** Node's exit code when its handler of uncaught exceptions throws ("Internal Exception Handler Run-Time Failure"). */
const NODE_HANDLER_FAILED = 7;

const OUT_OF_MEMORY = /heap out of memory|Reached heap limit|Allocation failed/;
const MB = 1024 * 1024;
const MEMORY_CHECK_MS = 100;

/**
 * Deaths the server causes under a call whose last messages may still be in the pipe (the console lines a run logged
 * before it blocked): the call hears what the pipe holds, to its end, before it fails (or completes, if its outcome was
 * in there too). Not a protocol error (what the worker sends is no longer believed), nor a stop of the runtime or of
 * an idle worker.
 */
const READ_TO_THE_END: ReadonlySet<WorkerExitReason> = new Set(['timeout', 'out_of_memory']);
/** How long a killed worker's pipe may take to end; the kernel holds a few hundred KB of it at most. */
const PIPE_END_LIMIT_MS = 5000;

/**
 * The permission model's switch: `--permission` since Node 22.13 (where it became stable; Node 24 dropped the old
 * name), `--experimental-permission` before. Where the model also guards the network (`--allow-net`), the network
 * is opened to it and left to the egress guard, which knows the operator's policy.
 */
const PERMISSION_FLAGS: readonly string[] = [
  process.allowedNodeEnvironmentFlags.has('--permission') ? '--permission' : '--experimental-permission',
  ...(process.allowedNodeEnvironmentFlags.has('--allow-net') ? ['--allow-net'] : []),
];

/**
 * Where there is a shell: the worker starts through it, and its `ulimit -c 0` (soft and hard) leaves no core file
 * behind a crash; the kernel would write the worker's memory (one account's events, db, secrets) into the working
 * folder, which every account's workers may read. The shell execs Node, so the pid stays the worker's.
 */
const NO_CORE_FILES: readonly string[] = fs.existsSync('/bin/sh') ? ['/bin/sh', '-c', 'ulimit -c 0 && exec "$@"', 'sh', process.execPath] : [];

/** Sets a worker's niceness; where the system refuses, the worker runs at the server's priority and says so once. */
function lowerPriority(pid: number, nice: number, logger: RuntimeLogger): void {
  try {
    os.setPriority(pid, nice);
  } catch (error) {
    if (!priorityWarned) logger.warn({ err: error, pid, nice }, 'could not lower the priority of a worker process');
    priorityWarned = true;
  }
}
let priorityWarned = false;

export class WorkerProcess {
  readonly accountId: string;
  readonly allowed: ReadonlySet<string>;
  /** Resolves once the process has exited and its stderr is read. */
  readonly closed: Promise<void>;
  private readonly child: ChildProcess;
  /** The IPC channel's pipe (the worker's fd 3). */
  private readonly channel: Duplex;
  private readonly spec: WorkerSpec;
  private readonly stderr: WorkerStderr;
  private current?: PendingCall;
  private exitError?: WorkerExitError;
  /** Killed under the current call, whose messages still in the pipe are read before it fails (READ_TO_THE_END). */
  private readingToEnd = false;
  private lastId = 0;
  /** Beside every message the worker sends; only the runtime's side of the worker knows it (see InitMessage). */
  private readonly token = randomBytes(18).toString('base64url');
  /** The main thread's CPU time at the end of the last call (or start), and what the last call used since. */
  private readonly cpuClock: CpuClock;
  private cpuAtLastReading: number | undefined;
  private lastCallCpu: number | undefined;
  /** The CPU clock as last read while no call ran: what a worker that dies idle had used by then. */
  private idleCpuReading: number | undefined;
  private unbilledCpu = 0;
  /** Set when the worker said its component code changed shared built-ins: it serves no call after the current one. */
  private spoiledFlag = false;
  /** Who made each recent request; see noteOrigin in invocation.ts. */
  readonly strays: StrayErrors;

  /** Resolves when the worker has said it is ready for requests. */
  static async start(spec: WorkerSpec): Promise<WorkerProcess> {
    const worker = new WorkerProcess(spec);
    await worker.waitReady();
    return worker;
  }

  private constructor(spec: WorkerSpec) {
    this.spec = spec;
    this.accountId = spec.accountId;
    this.strays = new StrayErrors(spec.onStrayError);
    this.allowed = new Set(spec.allowRead);
    const entry = workerEntry();
    // Spawned, not forked: fd 3 is a plain pipe whose frames the server reads itself (worker-channel.ts), while the
    // worker's Node takes it as its IPC channel, as fork's NODE_CHANNEL_* variables say (Node removes them from its env).
    this.child = spawn(
      NO_CORE_FILES[0] ?? process.execPath,
      [
        ...NO_CORE_FILES.slice(1),
        `--max-old-space-size=${spec.memoryMb}`,
        ...PERMISSION_FLAGS,
        // Node 20 takes one path per flag; a comma-separated list is read as a single path.
        ...[path.dirname(entry), ...spec.allowRead].map((p) => `--allow-fs-read=${p}`),
        '--experimental-require-module',
        '--disable-warning=ExperimentalWarning',
        entry,
        JSON.stringify(spec.egress),
      ],
      {
        // Not the server's execArgv (test runners add loaders) and not its environment (secrets).
        // Node reads NODE_EXTRA_CA_CERTS once, as the process starts: the only way to give a worker's TLS another CA.
        env: {
          NODE_ENV: 'production',
          TZ: 'UTC',
          ...(spec.extraCaFile !== undefined && { NODE_EXTRA_CA_CERTS: spec.extraCaFile }),
          NODE_CHANNEL_FD: '3',
          NODE_CHANNEL_SERIALIZATION_MODE: 'advanced',
        },
        ...(spec.user && { uid: spec.user.uid, gid: spec.user.gid }),
        cwd: path.dirname(entry),
        stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
      },
    );
    if (spec.nice > 0 && this.child.pid !== undefined) lowerPriority(this.child.pid, spec.nice, spec.logger);
    this.cpuClock = new CpuClock(this.child.pid);
    this.stderr = new WorkerStderr(this.child.stderr, (message) => this.kill('crashed', message));
    const channel = this.child.stdio[3] as Duplex;
    this.channel = channel;
    // A write to a worker that has just died fails here; its death is reported by 'close'.
    channel.on('error', () => undefined);
    readFrames(channel, { onMessage: (raw) => this.onMessage(raw), onMalformed: (reason) => this.kill('protocol_error', reason) }, tokenPrefix(this.token));
    const init: InitMessage = { t: 'init', token: this.token };
    writeFrame(channel, init);
    this.child.on('error', (error) => this.die('crashed', `the worker process failed: ${error.message}`));
    const memoryWatch = this.watchMemory();
    this.closed = new Promise((resolve) => {
      this.child.on('close', (code, signal) => {
        clearInterval(memoryWatch);
        this.die(...this.classifyExit(code, signal));
        // Every stdio stream has ended by now: the pipe has given all it held.
        if (this.readingToEnd) this.settle(this.exitError);
        this.cpuClock.close();
        resolve();
      });
    });
  }

  get alive(): boolean {
    return this.exitError === undefined;
  }

  /** Why the worker ended; undefined while it is alive. */
  get exit(): WorkerExitError | undefined {
    return this.exitError;
  }

  /** Whether the worker must not be lent again (a SpoiledMessage came): the pool retires it as its call ends. */
  get spoiled(): boolean {
    return this.spoiledFlag;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /**
   * CPU time the worker used from the end of its previous call to the end of its last one (so timers that ran
   * between calls count too), measured here, not reported by the worker; undefined where it cannot be measured.
   */
  get lastCallCpuMs(): number | undefined {
    return this.lastCallCpu;
  }

  /**
   * CPU time the worker used after its last call, when it ended without another (stopped idle, or its code ended it):
   * code a run left behind (timers) ran on it, and no later call of this worker carries it (see lastCallCpuMs).
   */
  get unbilledCpuMs(): number {
    return this.unbilledCpu;
  }

  nextRequestId(): number {
    return ++this.lastId;
  }

  /**
   * Sends a request and feeds the answers to `handle` until it says the call is complete; kills the worker when
   * `timeoutMs` pass, counted from the send or from the call's last `extendTimeout()`.
   */
  call(message: ToWorker, handle: CallHandler, timeoutMs: number): Promise<void> {
    return this.expect(message.id, handle, timeoutMs, () => writeFrame(this.channel, message));
  }

  /** Restarts the current call's timeout: for a caller that has seen the worker make progress. */
  extendTimeout(): void {
    this.current?.timer?.refresh();
  }

  kill(reason: WorkerExitReason, message: string): void {
    if (!this.die(reason, message)) return;
    this.child.kill('SIGKILL');
  }

  private takeCpuReading(): void {
    const now = this.cpuClock.readMs();
    this.lastCallCpu = now === undefined || this.cpuAtLastReading === undefined ? undefined : Math.max(0, now - this.cpuAtLastReading);
    if (now !== undefined) this.cpuAtLastReading = now;
  }

  private async waitReady(): Promise<void> {
    try {
      await this.expect(undefined, (m) => m.t === 'ready' || fail(`expected ready, got ${m.t}`), this.spec.startTimeoutMs);
    } catch (error) {
      this.kill('start_failed', 'the worker did not start');
      if (error instanceof WorkerExitError && error.reason !== 'closed') {
        throw new WorkerExitError('start_failed', `the worker did not start: ${error.message}`);
      }
      throw error;
    }
  }

  private expect(id: number | undefined, handle: CallHandler, timeoutMs: number, send?: () => void): Promise<void> {
    if (this.exitError) return Promise.reject(this.exitError);
    if (this.current) return Promise.reject(new Error('a worker runs one call at a time'));
    return new Promise<void>((resolve, reject) => {
      const call: PendingCall = { id, handle, resolve, reject };
      this.stderr.mark();
      call.timer = setTimeout(() => this.kill('timeout', `the call took longer than ${timeoutMs} ms`), timeoutMs);
      this.current = call;
      try {
        send?.();
      } catch (error) {
        this.kill('crashed', `cannot send to the worker: ${error instanceof Error ? error.message : String(error)}`);
      }
    });
  }

  /**
   * The heap limit does not cover Buffers and other memory outside V8's heap, so the worker's resident memory is
   * checked too: past twice the heap limit plus Node's own footprint, it is killed. For the worker's whole life, not
   * only while a call runs: a timer a run left behind allocates between calls as well. While idle it also reads the
   * CPU clock, for unbilledCpuMs.
   */
  private watchMemory(): NodeJS.Timeout | undefined {
    const pid = this.child.pid;
    if (pid === undefined) return undefined;
    const limitMb = this.spec.memoryMb * 2 + 128;
    const timer = setInterval(() => {
      if (!this.current) this.idleCpuReading = this.cpuClock.readMs() ?? this.idleCpuReading;
      const resident = residentBytes(pid);
      if (resident !== undefined && resident > limitMb * MB) {
        this.kill('out_of_memory', `the component used ${Math.round(resident / MB)} MB of memory, over the worker limit of ${limitMb} MB`);
      }
    }, MEMORY_CHECK_MS);
    timer.unref();
    return timer;
  }

  private settle(error?: WorkerExitError): void {
    const call = this.current;
    if (!call) return;
    this.current = undefined;
    // A call read to the end of its pipe had its CPU time read as its worker was killed, while the clock was readable.
    if (!this.readingToEnd) this.takeCpuReading();
    this.readingToEnd = false;
    clearTimeout(call.timer);
    if (error) call.reject(error);
    else call.resolve();
  }

  private onMessage(raw: unknown): void {
    if (this.exitError && !this.readingToEnd) return;
    try {
      const message = parseFromWorker(raw, this.token);
      // Outside the call protocol: it may come while idle or during another request.
      if (message.t === 'stray') {
        this.strays.report(message);
        return;
      }
      if (message.t === 'spoiled') {
        this.spoiledFlag = true;
        // During a call, that call's logs say so; while idle it was a timer some call left, which nothing else tells.
        if (!this.current) {
          this.spec.logger.info(
            { accountId: this.accountId, pid: this.child.pid },
            "a timer left by a finished call changed built-ins the account's components share: the worker serves no further call",
          );
        }
        return;
      }
      const call = this.current;
      if (!call) fail(`unexpected ${message.t} message while idle`);
      if ('id' in message && message.id !== call.id) fail(`message for request ${message.id} during request ${String(call.id)}`);
      if (call.handle(message)) this.settle();
    } catch (error) {
      const text = error instanceof Error ? error.message : String(error);
      if (!(error instanceof ProtocolError)) {
        this.spec.logger.error({ err: error, accountId: this.accountId }, 'worker call handler failed');
      }
      this.kill('protocol_error', text);
      if (this.readingToEnd) this.settle(this.exitError);
    }
  }

  /** Records the first cause of death; later ones (the `close` after our own SIGKILL) change nothing. */
  private die(reason: WorkerExitReason, message: string): boolean {
    if (this.exitError) return false;
    if (!this.current && this.cpuAtLastReading !== undefined) {
      // Still alive when killed; gone (its clock unreadable) when it ended by itself: then the last idle reading.
      const now = this.cpuClock.readMs() ?? this.idleCpuReading;
      if (now !== undefined) this.unbilledCpu = Math.max(0, now - this.cpuAtLastReading);
    }
    this.exitError = new WorkerExitError(reason, message);
    const call = this.current;
    if (call && READ_TO_THE_END.has(reason)) {
      this.takeCpuReading();
      this.readingToEnd = true;
      clearTimeout(call.timer);
      call.timer = setTimeout(() => this.settle(this.exitError), PIPE_END_LIMIT_MS);
    } else {
      this.settle(this.exitError);
    }
    this.spec.onExit(this);
    return true;
  }

  private classifyExit(code: number | null, signal: NodeJS.Signals | null): [WorkerExitReason, string] {
    if (OUT_OF_MEMORY.test(this.stderr.tail)) {
      return ['out_of_memory', `the component ran out of memory (worker heap limit ${this.spec.memoryMb} MB)`];
    }
    const exit = this.stderr.tail.lastIndexOf(`${EXIT_MARKER}(`);
    if (exit !== -1) {
      const shown = this.stderr.tail.slice(exit + EXIT_MARKER.length + 1).split(')')[0];
      return ['process_exit', `the component called process.exit(${shown})`];
    }
    // Node exits with 7 when its own handling of an uncaught exception fails: its internals call some built-ins
    // (Function.prototype.apply) as component code left them, which the worker's code cannot keep from them.
    const how = signal
      ? `signal ${signal}`
      : code === NODE_HANDLER_FAILED
        ? `exit code 7: Node's own handling of an uncaught exception failed, as when component code replaces a built-in Node relies on, such as Function.prototype.apply`
        : `exit code ${String(code)}`;
    // The server's install folder and where it keeps the account's code are no business of the component's author.
    return ['crashed', crashMessage(how, this.stderr.tail, [packageRoot(), ...this.spec.allowRead])];
  }
}

function fail(message: string): never {
  throw new ProtocolError(message);
}
