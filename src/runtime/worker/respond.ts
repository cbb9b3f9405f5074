// `respond()` of an HTTP interface prop and a step's `$.respond()`: checks the response and sends the first valid one at once.
import type { HttpResponse } from '../types.js';
import { jsonCopy } from './json.js';
import { HEADER_VALUE_INVALID, MAX_RESPONSE_BODY_BYTES, MAX_RESPONSE_HEADER_BYTES } from './limits.js';
import { isPlainObject } from './props.js';
import type { CallScope } from './scope.js';
import {
  ArrayBufferPrototypeGetByteLength,
  ArrayIsArray,
  BufferByteLength,
  BufferFrom,
  IsArrayBuffer,
  IsUint8Array,
  matches,
  NumberIsInteger,
  ObjectKeys,
  StringPrototypeToLowerCase,
  TypedArrayPrototypeGetBuffer,
  TypedArrayPrototypeGetByteLength,
  TypedArrayPrototypeGetByteOffset,
} from './primordials.js';
import { quote } from './quote.js';

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const HEADER_VALUE_FORBIDDEN = /[\r\n\0]/;
const STATUS_TEXT = /^[1-5][0-9]{2}$/;

function hasContentType(headers: Record<string, unknown>): boolean {
  const names = ObjectKeys(headers);
  for (let index = 0; index < names.length; index++) if (StringPrototypeToLowerCase(names[index]!) === 'content-type') return true;
  return false;
}

function headerText(name: string, value: unknown): string {
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
    throw new TypeError(`respond(): header ${quote(name)} must be a string`);
  }
  const result = `${value}`;
  if (matches(HEADER_VALUE_FORBIDDEN, result)) throw new TypeError(`respond(): header ${quote(name)} contains a line break`);
  if (matches(HEADER_VALUE_INVALID, result)) {
    throw new TypeError(`respond(): header ${quote(name)} holds a character HTTP does not allow in a header (tab, printable ASCII and Latin-1 only)`);
  }
  return result;
}

/**
 * A list stays a list, sent as one header line per value: joined with commas, `set-cookie: ["a=1; Expires=Wed, 21
 * Oct 2026 07:28:00 GMT", "b=2"]` would be one cookie no browser can read.
 */
function headerValue(name: string, value: unknown): string | string[] {
  if (!ArrayIsArray(value)) return headerText(name, value);
  const texts: string[] = [];
  for (let index = 0; index < value.length; index++) texts[index] = headerText(name, value[index]);
  return texts;
}

/**
 * The specification's `status`: an integer from 100 to 599. The reference registry's HTTP sources pass it from a
 * string prop (`status: this.resStatusCode`, whose default is "200", in http-new-requests and http-webhook), so three
 * digits written as a string ("200", nothing around them) are read as that integer; any other string is refused.
 */
function status(value: unknown): number {
  const number = typeof value === 'string' && matches(STATUS_TEXT, value) ? +value : value;
  if (typeof number !== 'number' || !NumberIsInteger(number) || number < 100 || number > 599) {
    throw new TypeError(`respond() needs a status that is an integer from 100 to 599, not ${quote(value)}`);
  }
  return number;
}

/** Turns what the component passed into an HttpResponse; throws a TypeError or RangeError explaining what is wrong. */
export function normalizeResponse(input: unknown): HttpResponse {
  if (!isPlainObject(input)) throw new TypeError('respond() takes an object: { status, headers, body }');
  // Without a prototype: a setter component code put on Object.prototype under a header's name would swallow it.
  const headers = { __proto__: null } as unknown as Record<string, string | string[]>;
  if (input.headers !== undefined && input.headers !== null) {
    if (!isPlainObject(input.headers)) throw new TypeError('respond(): headers must be an object');
    const given = input.headers;
    const names = ObjectKeys(given);
    let headerBytes = 0;
    for (let index = 0; index < names.length; index++) {
      const name = names[index]!;
      const value = given[name];
      // Left out as JSON leaves it out, and as the reference service does: its own quickstart echoes
      // `event.headers["Content-Type"]`, undefined since request header names arrive in lower case.
      if (value === undefined) continue;
      if (!matches(HEADER_NAME, name)) throw new TypeError(`respond(): ${quote(name)} is not a valid header name`);
      const texts = headerValue(name, value);
      headers[name] = texts;
      // Each value is a line of its own, its name written again (Latin-1: one byte a character).
      if (typeof texts === 'string') headerBytes += name.length + texts.length;
      else for (let line = 0; line < texts.length; line++) headerBytes += name.length + texts[line]!.length;
      if (headerBytes > MAX_RESPONSE_HEADER_BYTES) {
        throw new RangeError(`respond(): the headers (names and values) may be at most ${MAX_RESPONSE_HEADER_BYTES} bytes; these are more`);
      }
    }
  }
  const raw = input.body;
  let body: HttpResponse['body'];
  let size = 0;
  // Brand checks and accessors taken at start: `instanceof`, `Buffer.byteLength` and a view's `byteLength` are all
  // component code's to redefine, and a body measured through them could pass the limit.
  if (raw === undefined || raw === null) body = null;
  else if (typeof raw === 'string') {
    body = raw;
    size = BufferByteLength(raw, 'utf8');
  } else if (IsUint8Array(raw)) {
    size = TypedArrayPrototypeGetByteLength(raw);
    body = BufferFrom(TypedArrayPrototypeGetBuffer(raw), TypedArrayPrototypeGetByteOffset(raw), size);
  } else if (IsArrayBuffer(raw)) {
    size = ArrayBufferPrototypeGetByteLength(raw);
    body = BufferFrom(raw);
  } else {
    body = jsonCopy(raw, 'the response body').json;
    size = BufferByteLength(body, 'utf8');
    if (!hasContentType(headers)) headers['content-type'] = 'application/json';
  }
  if (size > MAX_RESPONSE_BODY_BYTES) {
    throw new RangeError(`respond(): the body is ${size} bytes; it may be at most ${MAX_RESPONSE_BODY_BYTES} bytes`);
  }
  return { status: status(input.status), headers, body };
}

export type Respond = (response: unknown) => void;

/**
 * Only the first valid call of a `run` or a step answers the request; other calls are logged as warnings and
 * ignored. A step answers the HTTP request that triggered its workflow, when that trigger allows custom responses.
 */
export function makeRespond(scope: CallScope, customResponse: boolean, send: (response: HttpResponse) => void): Respond {
  return function respond(input: unknown): void {
    if (scope.closed) return;
    if (scope.method !== 'run' && scope.method !== 'step') {
      scope.log('warn', `respond() is only usable in run and in steps, not in the ${scope.method} hook; the call was ignored`);
      return;
    }
    let response: HttpResponse;
    try {
      response = normalizeResponse(input);
    } catch (error) {
      scope.fail(error);
      throw error;
    }
    if (!customResponse) {
      scope.log(
        'warn',
        scope.method === 'step'
          ? '$.respond() was ignored: only a workflow whose trigger is {"type":"http","custom_response":true} answers its requests with it'
          : 'respond() was ignored: set customResponse: true on the $.interface.http prop to answer requests yourself',
      );
      return;
    }
    if (scope.response) {
      scope.log('warn', 'respond() was called more than once; only the first response was sent');
      return;
    }
    scope.response = response;
    send(response);
  };
}
