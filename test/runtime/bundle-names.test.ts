// Bundle and account-folder names are keyed: stable for a data folder, underivable from the code or the account id.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BundleNames } from '../../src/runtime/bundle-names.js';
import { tempDir } from '../helpers/server.js';

const sha = (text: string) => createHash('sha256').update(text).digest('hex');

describe('bundle names', () => {
  it('replaces the unkeyed names of an earlier version once, and keeps its key after', () => {
    const codeDir = path.join(tempDir(), 'code');
    const accountsDir = path.join(codeDir, 'accounts');
    const oldAccount = path.join(accountsDir, sha('u_1').slice(0, 32));
    fs.mkdirSync(oldAccount, { recursive: true });
    fs.writeFileSync(path.join(oldAccount, `${sha('x')}.cjs`), '');
    for (const ext of ['cjs', 'json']) fs.writeFileSync(path.join(codeDir, `${sha('x')}.${ext}`), '');

    const names = BundleNames.open(codeDir, accountsDir);
    expect(fs.readdirSync(codeDir).sort()).toEqual(['.names-key', 'accounts']);
    expect(fs.readdirSync(accountsDir)).toEqual([]);
    expect(names.code('x')).toMatch(/^[0-9a-f]{64}$/);
    expect(names.code('x')).not.toBe(sha('x'));
    expect(names.account('u_1')).not.toBe(sha('u_1').slice(0, 32));

    // Opened again (a restart), the key is kept and what was prepared under it too.
    const account = path.join(accountsDir, names.account('u_1'));
    fs.mkdirSync(account);
    fs.writeFileSync(path.join(codeDir, `${names.code('x')}.cjs`), '');
    const again = BundleNames.open(codeDir, accountsDir);
    expect([again.code('x'), again.account('u_1')]).toEqual([names.code('x'), names.account('u_1')]);
    expect(fs.existsSync(account) && fs.existsSync(path.join(codeDir, `${names.code('x')}.cjs`))).toBe(true);
    expect(BundleNames.open(path.join(tempDir(), 'code'), accountsDir).code('x')).not.toBe(names.code('x'));
  });
});
