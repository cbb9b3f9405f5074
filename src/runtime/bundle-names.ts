// Names the prepared bundles, and each account's folder of them, by a hash keyed with a secret of the data folder.
import { createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const KEY_FILE = '.names-key';

/**
 * Workers may not read the code folder, but Node's permission model still answers whether a path exists to
 * `fs.realpathSync`, `require.resolve` and `import()` (found, or not found, for a path they may not read). Bundles
 * named by the plain SHA-256 of their code would let any account tell whether some account saved a given code, and
 * account folders named by the hash of an account id whether that account ever ran code; keyed names tell nothing.
 */
export class BundleNames {
  private constructor(private readonly key: Buffer) {}

  /**
   * Reads the key from `codeDir`, or makes it. Made, it replaces the unkeyed names of an earlier version: their
   * bundles and account folders (links to bundles, made again on use) are removed first.
   */
  static open(codeDir: string, accountsDir: string): BundleNames {
    const keyPath = path.join(codeDir, KEY_FILE);
    fs.mkdirSync(codeDir, { recursive: true });
    try {
      return new BundleNames(fs.readFileSync(keyPath));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    for (const entry of fs.readdirSync(codeDir)) {
      if (/^[0-9a-f]{64}\.(cjs|json)$/.test(entry)) fs.rmSync(path.join(codeDir, entry), { force: true });
    }
    for (const entry of fs.existsSync(accountsDir) ? fs.readdirSync(accountsDir) : []) {
      if (/^[0-9a-f]{32}$/.test(entry)) fs.rmSync(path.join(accountsDir, entry), { recursive: true, force: true });
    }
    const temp = `${keyPath}.${randomBytes(6).toString('hex')}`;
    fs.writeFileSync(temp, randomBytes(32), { mode: 0o600 });
    try {
      // A link fails if another server process on the same data folder made the key first: theirs is used.
      fs.linkSync(temp, keyPath);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      fs.rmSync(temp, { force: true });
    }
    return new BundleNames(fs.readFileSync(keyPath));
  }

  /** The name (64 hex digits) of the bundle prepared from `code`. */
  code(code: string): string {
    return createHmac('sha256', this.key).update('code\0').update(code).digest('hex');
  }

  /** The name (32 hex digits) of `accountId`'s folder of bundles. */
  account(accountId: string): string {
    return createHmac('sha256', this.key).update('account\0').update(accountId).digest('hex').slice(0, 32);
  }
}
