// $.service.db keys are stored alike on SQLite and PostgreSQL, whose index takes at most 2,704 bytes an entry: a key
// past the bound is refused in the run that writes it, on both databases, rather than by PostgreSQL alone at commit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account } from '../helpers/account.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';

/** A source setting, then on its next run reading, a key of `chars` varied CJK characters (3 bytes each in UTF-8). */
const source = (chars: number) => `module.exports = {
  name: "long keys", version: "1", props: { db: "$.service.db" },
  async run() {
    let key = "";
    for (let i = 0; i < ${chars}; i++) key += String.fromCharCode(0x4e00 + ((i * 7919) % 20000));
    this.$emit({ seen: this.db.get(key) ?? null });
    this.db.set(key, 1);
  },
};`;

describe.each(DIALECTS)('$.service.db keys on %s', (dialect) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(dialect);
  });
  afterAll(async () => {
    await server?.destroy();
  });

  it('takes a key of up to 2,048 bytes of UTF-8 and refuses a longer one with a RangeError', async () => {
    const a = await account(server);
    const fits = await a.deploy(source(682));
    await a.runAndWait(fits, {});
    await a.runAndWait(fits, {});
    expect((await a.eventsOf(fits, 2)).map((e) => e.event)).toEqual([{ seen: 1 }, { seen: null }]);

    const past = await a.deploy(source(1024));
    await a.runAndWait(past, {});
    const [error] = await a.eventsOf(past, 1, '/$errors');
    expect(error.event.error).toMatchObject({ name: 'RangeError', message: '$.service.db keys may have at most 2048 bytes of UTF-8; this one has 3072' });
  });
});
