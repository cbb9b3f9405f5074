// Resource ids: a prefix and a time-ordered opaque part, so that ids sort by creation and serve as cursors.
import { monotonicFactory } from 'ulidx';

export type IdPrefix = 'u' | 'sc' | 'dc' | 'p' | 'wh' | 'sub' | 'd' | 'inv' | 'hi' | 'ep' | 'dl';

const nextUlid = monotonicFactory();

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${nextUlid().toLowerCase()}`;
}

const ID_SHAPE = /^[a-z]+_[0-9a-z]{26}$/;

/** True when `value` looks like an id with the given prefix; used to reject malformed ids early. */
export function isId(value: string, prefix: IdPrefix): boolean {
  return value.startsWith(`${prefix}_`) && ID_SHAPE.test(value);
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
