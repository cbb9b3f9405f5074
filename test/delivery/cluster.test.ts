// Two nodes on one PostgreSQL database: a live stream on either node sees events committed on the other.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { account, emitsOf, openStream } from './helpers.js';

describe.skipIf(!DIALECTS.includes('postgres'))('live streams across nodes (PostgreSQL)', () => {
  let first: TestServer;
  let second: TestServer;

  beforeAll(async () => {
    first = await startTestServer('postgres');
    second = await startTestServer('postgres', { databaseUrl: first.databaseUrl });
  });
  afterAll(async () => {
    // The second node shares the first's database, which the first drops.
    await second?.stop();
    await first?.destroy();
  });

  it('delivers every event to clients of both nodes, in order, whichever node ran the source', async () => {
    const a = await account(first);
    const source = await a.deploy();
    const here = openStream(`${first.url}/sources/${source}/sse`, a.key);
    const there = openStream(`${second.url}/v1/sources/${source}/sse`, a.key);
    try {
      await Promise.all([here.opened, there.opened]);
      for (let run = 1; run <= 3; run++) await a.runAndWait(source, emitsOf([{ event: `${run}a` }, { event: `${run}b` }]));
      const expected = ['1a', '1b', '2a', '2b', '3a', '3b'];
      for (const stream of [here, there]) {
        await waitFor(
          async () => stream.messages.length,
          (n) => n === expected.length,
          { what: 'six events' },
        );
        expect(stream.data().map((e) => e.event)).toEqual(expected);
      }
      expect(there.data()).toEqual(here.data());
    } finally {
      here.source.close();
      there.source.close();
    }
  });
});
