// Saved profiles are named safely: a name that is a key of every JavaScript object saves or finds nothing by mistake.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ProfileError, profilesPath, resolveServer, saveProfile } from '../../src/client/profiles.js';

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

  it('says which of the URL and the key is missing, not "no server to talk to" when a URL was given', () => {
    const empty = { XDG_CONFIG_HOME: fs.mkdtempSync(path.join(home, 'empty-')) };
    expect(() => resolveServer({ url: 'http://127.0.0.1:3000' }, empty)).toThrow(
      new ProfileError(
        'no API key for http://127.0.0.1:3000: pass --key trb_… (or set TRIBUTARY_KEY), or run tributary login --url http://127.0.0.1:3000 --key trb_…',
      ),
    );
    expect(() => resolveServer({}, { ...empty, TRIBUTARY_KEY: 'trb_k' })).toThrow(
      new ProfileError('no server URL for the key: pass --url http://host:3000 (or set TRIBUTARY_URL), or run tributary login'),
    );
    expect(() => resolveServer({}, empty)).toThrow(
      new ProfileError('no server to talk to: run tributary login --url http://host:3000 --key trb_…, or set TRIBUTARY_URL and TRIBUTARY_KEY'),
    );
  });
});
