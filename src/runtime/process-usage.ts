// What a worker process has used, as the kernel counts it (/proc, Linux): its resident memory and its main thread's CPU time.
import fs from 'node:fs';

/** Resident memory of a process from /proc (Linux); undefined where it cannot be read. */
export function residentBytes(pid: number): number | undefined {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * CPU time a process's main thread (where component code runs) has used, in ms, as the kernel counts it
 * (`/proc/<pid>/schedstat`, nanoseconds). The file stays open and is read again from its start on each reading:
 * 1 µs instead of the 3.5 µs of opening it each time, once per call of every batch.
 */
export class CpuClock {
  private fd: number | undefined;
  private readonly buffer = Buffer.alloc(64);

  constructor(pid: number | undefined) {
    try {
      this.fd = pid === undefined ? undefined : fs.openSync(`/proc/${pid}/schedstat`, 'r');
    } catch {
      this.fd = undefined; // Not Linux: calls are billed by their wall time instead.
    }
  }

  /** Undefined where the time cannot be read (not Linux, or the process is gone). */
  readMs(): number | undefined {
    if (this.fd === undefined) return undefined;
    try {
      const length = fs.readSync(this.fd, this.buffer, 0, this.buffer.length, 0);
      const nanoseconds = Number(this.buffer.toString('latin1', 0, length).split(' ', 1)[0]);
      return Number.isFinite(nanoseconds) ? nanoseconds / 1e6 : undefined;
    } catch {
      return undefined;
    }
  }

  close(): void {
    if (this.fd !== undefined) fs.closeSync(this.fd);
    this.fd = undefined;
  }
}
