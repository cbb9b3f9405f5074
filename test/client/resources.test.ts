// The TYPE column of `tributary list` for sources: what runs them, named as the web console names it.
import { describe, expect, it } from 'vitest';
import { sourceType } from '../../src/client/resources.js';

describe('sourceType', () => {
  it('names the triggers a source has, both when it has an endpoint and a timer', () => {
    const http = { endpoint_url: 'http://127.0.0.1:3000/e/en1' };
    const timer = { interval_seconds: 60 };
    expect(sourceType({ configured_props: { http } })).toBe('http');
    expect(sourceType({ configured_props: { timer } })).toBe('timer');
    expect(sourceType({ configured_props: { cron: { cron: '0 * * * *' } } })).toBe('timer');
    expect(sourceType({ configured_props: { http, timer } })).toBe('http+timer');
    expect(sourceType({ configured_props: { channel: 'random' } })).toBe('listener');
    expect(sourceType({})).toBe('listener');
  });
});
