// The real `tributary` binary run by a user other than the one who owns the files: what an operator's backup or restore account is.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';
import { BIN } from './processes.js';

const run = promisify(execFile);

/** True when the tests run as root, whose reads and writes no file mode stops: `tributary` then runs as `nobody`. */
export const AS_ROOT = process.getuid?.() === 0;

function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * Runs `tributary <args>` to its end as `nobody` (with su) when the tests run as root, else as the tests' own user,
 * for whom a file mode without their permission stops them just as well. Never throws for a non-zero exit.
 */
export function runAsOtherUser(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const command = [process.execPath, BIN, ...args].map(shellQuote).join(' ');
  const child = AS_ROOT ? run('su', ['nobody', '-s', '/bin/sh', '-c', command]) : run('/bin/sh', ['-c', command]);
  return child.then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}

/**
 * Lets the other user into `dir` and read what it holds (temp folders are their owner's alone), not write there; as
 * the tests' own user, the folder is made read-only. Returns what gives the owner write permission back.
 */
export function readOnlyForOtherUser(dir: string): () => void {
  for (const name of fs.readdirSync(dir)) fs.chmodSync(`${dir}/${name}`, AS_ROOT ? 0o644 : 0o444);
  fs.chmodSync(dir, AS_ROOT ? 0o755 : 0o555);
  return () => fs.chmodSync(dir, 0o755);
}

/** Lets the other user write in `dir` (a folder for a backup to be written to, a data directory to restore into). */
export function writableByOtherUser(dir: string): void {
  fs.chmodSync(dir, 0o777);
}
