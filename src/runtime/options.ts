// The settings a ComponentRuntime is built with, checked once and frozen.
import path from 'node:path';
import { checkEgressAllow, type EgressPolicy } from './worker/egress-rules.js';
import type { WorkerUserSetting } from './worker-user.js';

export interface RuntimeLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

export interface RuntimeOptions {
  /** Absolute; the runtime owns `<dataDir>/code` and `<dataDir>/packages`. */
  dataDir: string;
  /** `--max-old-space-size` of each worker. */
  workerMemoryMb: number;
  /** Most worker processes alive at once. */
  poolSize: number;
  /**
   * Niceness of worker processes (0–19; default 0). Above 0, a worker the server wakes does not preempt the
   * server's thread, and component code cannot starve the API or the queue of CPU.
   */
  workerNice?: number;
  /** How long loading and inspecting a module may take. */
  loadTimeoutMs: number;
  /** Where component code may connect (default: public addresses only). */
  egress?: EgressPolicy;
  /** The operating-system user workers run as: one for all, one per account, or undefined: the server's (worker-user.ts). */
  workerUser?: WorkerUserSetting;
  /**
   * Absolute path of a PEM file of extra certificate authorities that component code's TLS connections trust (a company
   * CA, a local mock's): each worker gets it as NODE_EXTRA_CA_CERTS, beside the well-known roots, and may read it.
   */
  extraCaFile?: string;
  logger: RuntimeLogger;
}

function positiveInteger(value: unknown, name: string): void {
  if (!Number.isSafeInteger(value) || (value as number) < 1) throw new TypeError(`runtime option ${name} must be a positive integer`);
}

export function checkOptions(options: RuntimeOptions): Readonly<RuntimeOptions & { egress: EgressPolicy }> {
  if (typeof options.dataDir !== 'string' || !path.isAbsolute(options.dataDir)) {
    throw new TypeError('runtime option dataDir must be an absolute path');
  }
  positiveInteger(options.workerMemoryMb, 'workerMemoryMb');
  positiveInteger(options.poolSize, 'poolSize');
  positiveInteger(options.loadTimeoutMs, 'loadTimeoutMs');
  const nice = options.workerNice ?? 0;
  if (!Number.isSafeInteger(nice) || nice < 0 || nice > 19) throw new TypeError('runtime option workerNice must be an integer from 0 to 19');
  const egress = options.egress ?? { allowPrivateNetwork: false, allow: [] };
  checkEgressAllow(egress.allow);
  if (options.extraCaFile !== undefined && (typeof options.extraCaFile !== 'string' || !path.isAbsolute(options.extraCaFile))) {
    throw new TypeError('runtime option extraCaFile must be an absolute path');
  }
  return Object.freeze({ ...options, egress });
}
