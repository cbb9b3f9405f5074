// Which operating-system user worker processes run as, and the file modes that let that user read only component code.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface WorkerUser {
  uid: number;
  gid: number;
}

/**
 * `auto` (the default): `nobody` when the server runs as root, otherwise the server's own user; `same`: the
 * server's user always; a user name, or `uid:gid`. Throws a TypeError naming a setting it cannot resolve.
 */
export function resolveWorkerUser(setting: string): WorkerUser | undefined {
  const running = os.userInfo();
  if (setting === 'same' || (setting === 'auto' && running.uid !== 0)) return undefined;
  const name = setting === 'auto' ? 'nobody' : setting;
  const numeric = /^(\d+):(\d+)$/.exec(name);
  if (numeric) return { uid: Number(numeric[1]), gid: Number(numeric[2]) };
  try {
    // The system's database of users, as `id` reads it (NSS included); Node has no call for another user.
    const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
    const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
    return { uid, gid };
  } catch {
    throw new TypeError(`worker user "${name}" does not exist; give an existing user, uid:gid, or "same"`);
  }
}

/**
 * Lets the worker user reach the folders it reads under the data folder: the data folder and the folders on the
 * way are made traversable for others (x, not listable) and the folders themselves readable. What lies beside
 * them (the database, the secret key) keeps a mode private to the server's user.
 */
export function openForWorkers(dataDir: string, folders: Array<{ dir: string; mode: number }>): void {
  addMode(dataDir, 0o711);
  for (const { dir, mode } of folders) {
    fs.mkdirSync(dir, { recursive: true });
    // The runtime's own folders get exactly their mode (code/ must not be listable, even if it was before).
    fs.chmodSync(dir, mode);
    for (let parent = path.dirname(dir); parent.startsWith(dataDir) && parent !== dataDir; parent = path.dirname(parent)) addMode(parent, 0o711);
  }
}

function addMode(file: string, mode: number): void {
  const current = fs.statSync(file).mode & 0o777;
  if ((current & mode) !== mode) fs.chmodSync(file, current | mode);
}

/** The first of `paths` (or a folder above one) that `user` cannot reach, by the modes on the way; undefined if none. */
export function firstUnreachable(user: WorkerUser, paths: string[]): string | undefined {
  for (const target of paths) {
    const chain: string[] = [];
    for (let dir = path.resolve(target); ; dir = path.dirname(dir)) {
      chain.unshift(dir);
      if (dir === path.dirname(dir)) break;
    }
    for (const [i, entry] of chain.entries()) {
      let stat: fs.Stats;
      try {
        stat = fs.statSync(entry);
      } catch {
        break; // Created later, by the runtime, with the modes it needs.
      }
      const bits = stat.uid === user.uid ? (stat.mode >> 6) & 7 : stat.gid === user.gid ? (stat.mode >> 3) & 7 : stat.mode & 7;
      // Folders on the way need x; the target itself needs r (and x when it is a folder).
      const needed = i < chain.length - 1 ? 1 : stat.isDirectory() ? 5 : 4;
      if ((bits & needed) !== needed) return entry;
    }
  }
  return undefined;
}
