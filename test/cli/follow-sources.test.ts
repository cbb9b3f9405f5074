// `tributary events dc_… -f`, which follows a source over its live stream: an answer that says "later" (429, 503) is
// waited out and the stream opened again, resuming after the last event shown (other answers end the command:
// test/cli/client.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api.js';
import { showStream } from '../../src/client/follow.js';
import { openStream } from '../delivery/helpers.js';
import { account, emitsOf } from '../helpers/account.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

describe('following a source whose live stream is refused for now', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer('sqlite', {}, { maxStreamsPerAccount: 1 });
  });
  afterAll(async () => {
    await server?.destroy();
  });

  it('waits out a 429 too_many_streams with a notice each way, then follows from where it was', async () => {
    const a = await account(server);
    const source = await a.deploy();
    await a.runAndWait(source, emitsOf([{ event: { n: 'before' } }]));
    // The account's one stream is taken: the command's stream is refused with 429 until it closes.
    const holder = openStream(`${server.url}/v1/sources/${source}/sse`, a.key);
    await holder.opened;
    const printed: string[] = [];
    const notices: string[] = [];
    const stop = new AbortController();
    const api = new ApiClient({ url: server.url, key: a.key });
    const following = showStream(api, source, {
      stream: 'events',
      limit: 1,
      follow: true,
      json: false,
      print: (line) => printed.push(line),
      notice: (line) => notices.push(line),
      signal: stop.signal,
    });
    try {
      await waitFor(
        async () => notices.join('\n'),
        (text) => text.includes(`the live stream of ${source} answered 429; trying again, first in 1 s`),
        { what: `the 429 notice; notices: ${notices.join(' | ')}` },
      );
      // Before the fix the command ended here, with "answered 429: Non-200 status code (429)".
      holder.source.close();
      await waitFor(
        async () => notices.join('\n'),
        (text) => text.includes('reconnected; resuming after the last event shown'),
        { what: `the stream to open again; notices: ${notices.join(' | ')}` },
      );
      await a.runAndWait(source, emitsOf([{ event: { n: 'after' } }]));
      await waitFor(
        async () => printed.join('\n'),
        (text) => text.includes('{"n":"after"}'),
        { what: `the live event; printed: ${printed.join(' | ')}` },
      );
      // The event shown before the refusal is not shown again.
      expect(printed.filter((line) => line.includes('{"n":"before"}'))).toHaveLength(1);
    } finally {
      stop.abort();
      holder.source.close();
    }
    await following;
  });
});
