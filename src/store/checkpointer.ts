// Copies the SQLite write-ahead log into the database file from a thread of its own, so that commits never wait for it.
import { Worker } from 'node:worker_threads';
import { SQLITE_DRIVER_PATH } from './sqlite-file.js';
import { outageOf } from '../model/outages.js';

/**
 * The thread's code. It opens its own connection to the file and runs a PASSIVE checkpoint every `everyMs`:
 * one that copies what it can without blocking the server's commits, with the fsync it needs off the server's
 * thread. Every `syncLogEveryMs` it also flushes the log file to disk (see CheckpointerOptions). Errors are
 * posted back; `stop` closes the connection and lets the thread end.
 */
const THREAD_SOURCE = `
const fs = require('node:fs');
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
db.pragma('synchronous = NORMAL');
const checkpoint = () => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch (error) {
    parentPort.postMessage({ error: String((error && error.message) || error), code: error && error.code });
  }
};
const syncLog = () => {
  let fd;
  try {
    fd = fs.openSync(workerData.file + '-wal', 'r');
    fs.fdatasyncSync(fd);
  } catch {
    // No log yet, or it is being replaced: the next round syncs it, and SQLite's own syncs never depend on these.
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
};
const timer = setInterval(checkpoint, workerData.everyMs);
const syncTimer = setInterval(syncLog, workerData.syncLogEveryMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  clearInterval(syncTimer);
  checkpoint();
  db.close();
  parentPort.close();
});
`;

export interface CheckpointerOptions {
  /** Time between checkpoints; the log grows by what commits write in that time. */
  everyMs: number;
  /**
   * Time between flushes of the log file. The commit that starts the log over syncs the log on the server's
   * thread (SQLite does so whenever the log restarts), and that sync waits for every page not yet on disk;
   * flushed here often, it finds little left (on a virtual disk: 2–5 ms instead of 10–18 ms).
   */
  syncLogEveryMs: number;
  /**
   * Called when the thread fails; the caller should then let its own connection checkpoint again. Also called, each
   * time, for a checkpoint that met an outage (outageOf: a full disk), after which the thread goes on as before.
   */
  onFailure(error: Error): void;
}

export class BackgroundCheckpointer {
  private readonly thread: Worker;
  private readonly ended: Promise<void>;
  private stopping = false;

  constructor(file: string, options: CheckpointerOptions) {
    const driver = SQLITE_DRIVER_PATH;
    this.thread = new Worker(THREAD_SOURCE, { eval: true, workerData: { driver, file, everyMs: options.everyMs, syncLogEveryMs: options.syncLogEveryMs } });
    // It must not keep the process alive on its own; close() ends it.
    this.thread.unref();
    let failed = false;
    const fail = (error: Error) => {
      if (failed || this.stopping) return;
      failed = true;
      options.onFailure(error);
    };
    this.thread.on('message', (message: { error?: string; code?: string }) => {
      if (!message.error) return;
      const error = Object.assign(new Error(`background checkpoint failed: ${message.error}`), { code: message.code });
      // A full disk (or a lock) passes: the thread goes on checkpointing, and succeeds once there is room again.
      if (outageOf(error)) options.onFailure(error);
      else fail(error);
    });
    this.thread.on('error', (error) => fail(error));
    this.ended = new Promise((resolve) => {
      this.thread.once('exit', (code) => {
        if (code !== 0) fail(new Error(`the checkpoint thread exited with code ${code}`));
        resolve();
      });
    });
  }

  /** Runs a last checkpoint and ends the thread. */
  async close(): Promise<void> {
    this.stopping = true;
    // Waited for, it must keep the process alive: closed right after opening (a refused start), nothing else may.
    this.thread.ref();
    this.thread.postMessage('stop');
    await this.ended;
  }
}
