// The README's error table and the error registry say the same thing: every code, with its status, and no other.
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERRORS, ServiceError } from '../../src/model/errors.js';

const readme = fs.readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

describe('error registry', () => {
  it('is listed in full by the README error table, each code with its status', () => {
    const rows = [...readme.matchAll(/^\| (\d{3}) \| `([a-z_]+)` \| (.+) \|$/gm)].map((m) => [m[2], Number(m[1])]);
    expect(Object.fromEntries(rows)).toEqual(Object.fromEntries(Object.entries(ERRORS).map(([code, e]) => [code, e.status])));
  });

  it('gives a thrown error the status its code is registered with', () => {
    expect(new ServiceError('quota_exceeded', 'over quota', undefined, 60)).toMatchObject({ status: 429, code: 'quota_exceeded', retryAfterSeconds: 60 });
  });
});
