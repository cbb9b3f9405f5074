// Gives each account a folder of hard links to the bundles it uses: its workers may read that folder, and no other account's code.
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

export class AccountCode {
  /** Links known to exist, so the hot path of an invocation touches no disk. */
  private readonly linked = new Set<string>();

  constructor(private readonly root: string) {}

  /** Named by a hash, so no account id can steer the path. */
  dir(accountId: string): string {
    return path.join(this.root, createHash('sha256').update(accountId).digest('hex').slice(0, 32));
  }

  /**
   * The path under which `accountId`'s workers load the bundle. A hard link, not a symlink: the module loader
   * resolves symlinks to their target, which the worker may not read.
   */
  async link(accountId: string, artifactPath: string): Promise<string> {
    const target = path.join(this.dir(accountId), path.basename(artifactPath));
    if (this.linked.has(target)) return target;
    const present = await fs.access(target).then(
      () => true,
      () => false,
    );
    if (!present) {
      await fs.mkdir(path.dirname(target), { recursive: true });
      await fs.link(artifactPath, target).catch(async (error: NodeJS.ErrnoException) => {
        if (error.code === 'EEXIST') return;
        // A file system without hard links: a copy, renamed into place so no worker sees half a file.
        const temp = `${target}.${randomBytes(6).toString('hex')}.tmp`;
        await fs.copyFile(artifactPath, temp);
        await fs.rename(temp, target);
      });
    }
    this.linked.add(target);
    return target;
  }
}
