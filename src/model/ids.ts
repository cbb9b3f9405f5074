// Resource ids: a prefix and a time-ordered opaque part, so that ids sort by creation and serve as cursors.
import { randomBytes, randomFillSync } from 'node:crypto';

export type IdPrefix = 'u' | 'sc' | 'dc' | 'p' | 'wh' | 'sub' | 'd' | 'inv' | 'hi' | 'dl' | 'wr' | 'ws' | 'apn' | 'ds';

/** Crockford's base32 in lower case, as ULIDs use it: ids compare as strings in time order. */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const RANDOM_CHARS = 16;

// Ids are made on every queued invocation, so randomness is drawn from a pool instead of one call per id.
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;
let lastMs = -1;
const lastRandom = new Uint8Array(RANDOM_CHARS);

function fillRandom(): void {
  if (poolOffset + RANDOM_CHARS > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  for (let i = 0; i < RANDOM_CHARS; i++) lastRandom[i] = pool[poolOffset++]! & 31;
}

/** Within one millisecond the random part counts up, so ids made by this process are strictly increasing. */
function incrementRandom(): void {
  for (let i = RANDOM_CHARS - 1; i >= 0; i--) {
    if (lastRandom[i]! < 31) {
      lastRandom[i]! += 1;
      return;
    }
    lastRandom[i] = 0;
  }
}

/** A ULID-shaped id (48-bit time, 80 random bits) in lower case. */
export function ulid(nowMs = Date.now()): string {
  if (nowMs > lastMs) {
    lastMs = nowMs;
    fillRandom();
  } else incrementRandom();
  let time = '';
  let t = lastMs;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32]! + time;
    t = Math.floor(t / 32);
  }
  let random = '';
  for (let i = 0; i < RANDOM_CHARS; i++) random += ALPHABET[lastRandom[i]!]!;
  return time + random;
}

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid()}`;
}

const ID_SHAPE = /^[a-z]+_[0-9a-z]{26}$/;

/** True when `value` looks like an id with the given prefix; used to reject malformed ids early. */
export function isId(value: string, prefix: IdPrefix): boolean {
  return value.startsWith(`${prefix}_`) && ID_SHAPE.test(value);
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/** An unguessable HTTP endpoint id (of a source or a workflow): `en` and 40 hex digits. */
export function newEndpointId(): string {
  return `en${randomBytes(20).toString('hex')}`;
}
