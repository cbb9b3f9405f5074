// Saved profiles are named safely: a name that is a key of every JavaScript object saves or finds nothing by mistake.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { profilesPath, resolveServer, saveProfile } from '../../src/client/profiles.js';

const home = fs.mkdtempSync(path.join(os.tmpdir(), 'trb-profiles-'));
const env = { XDG_CONFIG_HOME: home };
const address = { url: 'http://127.0.0.1:3000', key: 'trb_k' };

describe('profile names', () => {
  afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

  it('refuses a name that is not letters, digits, ".", "_" or "-" (__proto__ saved nothing and said saved), and finds only profiles saved', () => {
    for (const name of ['__proto__', '', ' staging', 'a/b', 'x'.repeat(65)]) {
      expect(() => saveProfile(name, address, env), name).toThrow(`"${name}" is not a profile name`);
    }
    expect(fs.existsSync(profilesPath(env))).toBe(false);
    saveProfile('staging-2', address, env);
    saveProfile('constructor', { ...address, key: 'trb_c' }, env);
    expect(resolveServer({ profile: 'constructor' }, env)).toEqual({ ...address, key: 'trb_c', profile: 'constructor' });
    // A key every object has, but no profile saved under it.
    expect(() => resolveServer({ profile: 'toString' }, env)).toThrow('no profile "toString"');
    expect(() => resolveServer({ profile: '__proto__' }, env)).toThrow('"__proto__" is not a profile name');
    expect(JSON.parse(fs.readFileSync(profilesPath(env), 'utf8'))).toEqual({
      current: 'constructor',
      profiles: { 'staging-2': address, constructor: { ...address, key: 'trb_c' } },
    });
  });
});
