// Statements compiled once: the SQL is built once per dialect and shape, and a values() out of order is refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compiledOnce, runCompiled } from '../../src/store/compiled.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';

describe.each(DIALECTS)('compiled statements on %s', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(dialect);
  });
  afterAll(async () => {
    await server?.destroy();
  });

  it('runs with new values each time, for in-lists of any length', async () => {
    const a = await server.createUser({ username: `compiled-a-${dialect}` });
    const b = await server.createUser({ username: `compiled-b-${dialect}` });
    let builds = 0;
    const usersNamed = compiledOnce(
      'usersNamed',
      (db, names: string[]) => {
        builds++;
        return db.selectFrom('users').select('username').where('username', 'in', names).orderBy('username');
      },
      (names) => names,
    );
    const { db } = server.running.services.store;
    expect((await usersNamed(db, [a.username])).rows).toEqual([{ username: a.username }]);
    expect((await usersNamed(db, [b.username])).rows).toEqual([{ username: b.username }]);
    expect((await usersNamed(db, [a.username, b.username])).rows).toEqual([{ username: a.username }, { username: b.username }]);
    // One build for the one-name shape, one for the two-name shape.
    expect(builds).toBe(2);
  });

  it('refuses values() that do not list the values in the order the SQL binds them', async () => {
    const wrongOrder = compiledOnce(
      'wrongOrder',
      (db, name: string, limit: number) => db.selectFrom('users').select('id').where('username', '=', name).limit(limit),
      (name, limit) => [limit, name],
    );
    await expect(wrongOrder(server.running.services.store.db, 'x', 1)).rejects.toThrow(
      /statement wrongOrder: values\(\) lists \[1,"x"\], the SQL binds \["x",1\]/,
    );
  });

  it('runs compiled SQL inside a transaction as part of it: reads see its writes, writes report their count, a rollback undoes them', async () => {
    const user = await server.createUser({ username: `compiled-trx-${dialect}` });
    const { db, dialect: name } = server.running.services.store;
    const p = (i: number) => (name === 'postgres' ? `$${i}` : '?');
    const rename = `update "users" set "username" = ${p(1)} where "id" = ${p(2)}`;
    const read = `select "username" from "users" where "id" = ${p(1)}`;
    const renamed = `${user.username}-renamed`;

    await expect(
      db.transaction().execute(async (trx) => {
        const written = await runCompiled(trx, rename, [renamed, user.id]);
        expect(written.numAffectedRows).toBe(1n);
        expect((await runCompiled(trx, read, [user.id])).rows).toEqual([{ username: renamed }]);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect((await runCompiled(db, read, [user.id])).rows).toEqual([{ username: user.username }]);

    const missing = await db.transaction().execute((trx) => runCompiled(trx, rename, ['nobody', 'no-such-id']));
    expect(missing.numAffectedRows).toBe(0n);
    await expect(db.transaction().execute((trx) => runCompiled(trx, 'select * from "no_such_table"', []))).rejects.toThrow(/no_such_table/);
    // The connection is still usable after the failed statement's transaction rolled back.
    await db.transaction().execute((trx) => runCompiled(trx, rename, [renamed, user.id]));
    expect((await runCompiled(db, read, [user.id])).rows).toEqual([{ username: renamed }]);
  });
});
