// Gives each account a folder of copies of the bundles it uses: its workers may read that folder, and no other account's code.
import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { LRUCache } from 'lru-cache';
import type { BundleNames } from './bundle-names.js';

export class AccountCode {
  // Bounded by a count in maxSize, not by max, which would allocate its arrays for 100,000 entries up front
  // (as lib/cache-bounds.ts explains; the runtime imports nothing outside itself).
  /** The inode each link was last seen pointing at and when, so that the usual call costs no system call. */
  private readonly linked = new LRUCache<string, { ino: number; checkedMs: number }>({ maxSize: 100_000, sizeCalculation: () => 1 });
  /** Each account's folder, so that the usual call hashes nothing. */
  private readonly dirs = new LRUCache<string, string>({ maxSize: 100_000, sizeCalculation: () => 1 });
  /** How long a link is trusted before the bundle is looked at again. */
  private static readonly RECHECK_MS = 1000;

  /**
   * `ownerOf` is set when each account's workers run as their own user: then the folder is that user's alone
   * (0700) and holds copies it owns, since a hard link shares its file's owner with every other link.
   */
  constructor(
    private readonly root: string,
    private readonly names: BundleNames,
    private readonly ownerOf?: (accountId: string) => { uid: number; gid: number },
  ) {}

  /** Named by a keyed hash, so no account id can steer the path, nor tell it (bundle-names.ts). */
  dir(accountId: string): string {
    let dir = this.dirs.get(accountId);
    if (dir === undefined) {
      dir = path.join(this.root, this.names.account(accountId));
      this.dirs.set(accountId, dir);
    }
    return dir;
  }

  /**
   * The path under which `accountId`'s workers load the bundle: a copy of it. Not a symlink: the module loader
   * resolves symlinks to their target, which the worker may not read. Nor a hard link: its link count (`nlink`) and
   * change time, which `fs.statSync(__filename)` shows the component, would tell how many other accounts use the same
   * code and when one last started to (bundle-names.ts keeps that from them). A bundle rewritten since (its packages
   * were reinstalled elsewhere) is copied again within RECHECK_MS; a hard link an earlier version made is replaced by
   * a copy the first time it is used.
   */
  async link(accountId: string, artifactPath: string): Promise<string> {
    const target = path.join(this.dir(accountId), path.basename(artifactPath));
    const nowMs = Date.now();
    const known = this.linked.get(target);
    // Runs before every batch: at one event per batch, even a stat each time is a measurable share of the work.
    if (known && nowMs - known.checkedMs < AccountCode.RECHECK_MS) return target;
    // Synchronous on purpose: a stat of a cached inode costs less than the round trip through libuv's thread
    // pool that the asynchronous one adds to the batch's latency.
    const { ino } = statSync(artifactPath);
    if (known?.ino === ino) {
      known.checkedMs = nowMs;
      return target;
    }
    const owner = this.ownerOf?.(accountId);
    const dir = path.dirname(target);
    // Readable by the worker user whatever the umask (workers may run as another user; worker-user.ts).
    if ((await fs.mkdir(dir, { recursive: true })) !== undefined || owner) {
      await fs.chmod(dir, owner ? 0o700 : 0o755);
      if (owner) await fs.chown(dir, owner.uid, owner.gid);
    }
    // Copied beside the target and renamed over it, so a worker never sees a missing or half-written file.
    const temp = `${target}.${randomBytes(6).toString('hex')}.tmp`;
    await fs.copyFile(artifactPath, temp);
    if (owner) await fs.chown(temp, owner.uid, owner.gid);
    await fs.chmod(temp, owner ? 0o400 : 0o444);
    await fs.rename(temp, target);
    this.linked.set(target, { ino, checkedMs: nowMs });
    return target;
  }
}
