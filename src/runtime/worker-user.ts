// Which operating-system user worker processes run as, and the file modes that let that user read only component code.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface WorkerUser {
  uid: number;
  gid: number;
}

/** One user for every worker, each account its own (`per-account`), or the server's user (undefined). */
export type WorkerUserSetting = WorkerUser | 'per-account' | undefined;

/** Accounts' own users are numbered from here, far above the users a system creates for people and daemons. */
export const FIRST_ACCOUNT_UID = 200_000;

/**
 * `auto` (the default): `nobody` when the server runs as root, otherwise the server's own user; `same`: the
 * server's user always; `per-account`: a user of its own for each account (root only); a user name, or
 * `uid:gid`. Throws a TypeError naming a setting it cannot resolve.
 */
export function resolveWorkerUser(setting: string): WorkerUserSetting {
  // The configuration checks the setting and the app uses it: one lookup serves both.
  if (!resolved.has(setting)) resolved.set(setting, lookUpWorkerUser(setting));
  return resolved.get(setting);
}

const resolved = new Map<string, WorkerUserSetting>();

function lookUpWorkerUser(setting: string): WorkerUserSetting {
  const running = os.userInfo();
  if (setting === 'per-account') {
    if (running.uid !== 0) throw new TypeError('worker user "per-account" needs the server to run as root');
    return 'per-account';
  }
  if (setting === 'same' || (setting === 'auto' && running.uid !== 0)) return undefined;
  const name = setting === 'auto' ? 'nobody' : setting;
  const numeric = /^(\d+):(\d+)$/.exec(name);
  if (numeric) return { uid: Number(numeric[1]), gid: Number(numeric[2]) };
  let ids = '';
  try {
    // The system's database of users, as `id` reads it (NSS included); Node has no call for another user.
    ids = execFileSync('id', [name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    // Reported below, as for output that names no uid.
  }
  const found = /uid=(\d+).*?gid=(\d+)/.exec(ids);
  if (!found) throw new TypeError(`worker user "${name}" does not exist; give an existing user, uid:gid, or "same"`);
  return { uid: Number(found[1]), gid: Number(found[2]) };
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

/**
 * Gives each account a uid (and a gid of the same number) of its own, from FIRST_ACCOUNT_UID on, remembered in
 * `<dataDir>/worker-users.json` so that an account keeps its user across restarts. The users need not exist in
 * the system's user database: the kernel takes any number.
 */
export class AccountUsers {
  private readonly file: string;
  private readonly uids: Record<string, number>;

  constructor(dataDir: string) {
    this.file = path.join(dataDir, 'worker-users.json');
    this.uids = fs.existsSync(this.file) ? (JSON.parse(fs.readFileSync(this.file, 'utf8')) as Record<string, number>) : {};
  }

  userFor(accountId: string): WorkerUser {
    let uid = this.uids[accountId];
    if (uid === undefined) {
      uid = FIRST_ACCOUNT_UID + Object.keys(this.uids).length;
      this.uids[accountId] = uid;
      const temp = `${this.file}.tmp`;
      fs.writeFileSync(temp, JSON.stringify(this.uids), { mode: 0o600 });
      fs.renameSync(temp, this.file);
    }
    return { uid, gid: uid };
  }
}

/** How workers of each account run, as the runtime set it up. */
export interface WorkerUsers {
  /** The user an account's workers run as; undefined: the server's. */
  userFor(accountId: string): WorkerUser | undefined;
  /** Where the accounts' folders of bundles live. */
  accountsDir: string;
  /** Set when each account has a user of its own: it owns the account's folder and the copies in it. */
  ownerOf?: (accountId: string) => WorkerUser;
}

/**
 * Sets up the data folder for the setting and says who runs each account's workers. Where the user cannot reach
 * the install or the data folder, the server warns and keeps its own user rather than fail every start.
 */
export function prepareWorkerUsers(
  setting: WorkerUserSetting,
  dataDir: string,
  mustReach: string[],
  logger: { warn(obj: object, msg?: string): void },
): WorkerUsers {
  const codeDir = path.join(dataDir, 'code');
  const packagesDir = path.join(dataDir, 'packages');
  const sameUser: WorkerUsers = { userFor: () => undefined, accountsDir: path.join(codeDir, 'accounts') };
  if (setting === undefined) return sameUser;
  // An account's own user is nobody's owner or group: it reaches what "others" may.
  const probe = setting === 'per-account' ? { uid: FIRST_ACCOUNT_UID - 1, gid: FIRST_ACCOUNT_UID - 1 } : setting;
  const blocked = firstUnreachable(probe, [...mustReach, path.dirname(dataDir)]);
  if (blocked) {
    logger.warn(
      { path: blocked, uid: probe.uid },
      'the worker user cannot reach this path, so workers run as the server user; install Tributary and its data where other users can traverse, or pass --worker-user same',
    );
    return sameUser;
  }
  if (setting === 'per-account') {
    // Bundles stay the server's (code/ 0700); each account reads copies in a folder only its user may enter.
    const accountsDir = path.join(dataDir, 'accounts');
    openForWorkers(dataDir, [
      { dir: codeDir, mode: 0o700 },
      { dir: accountsDir, mode: 0o711 },
      { dir: packagesDir, mode: 0o755 },
    ]);
    const users = new AccountUsers(dataDir);
    return { userFor: (accountId) => users.userFor(accountId), accountsDir, ownerOf: (accountId) => users.userFor(accountId) };
  }
  // Bundles are found by name, never listed (0711); an account's folder and the npm packages are readable.
  openForWorkers(dataDir, [
    { dir: codeDir, mode: 0o711 },
    { dir: path.join(codeDir, 'accounts'), mode: 0o711 },
    { dir: packagesDir, mode: 0o755 },
  ]);
  return { userFor: () => setting, accountsDir: path.join(codeDir, 'accounts') };
}
