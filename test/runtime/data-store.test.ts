// data_store props in the worker: async get/set/has/delete/keys/entries/clear/setTtl over the contents the server
// loaded, writes reported only for calls that succeed, merged in order across a batch, read-only while configuring.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mergeDataStoreChanges } from '../../src/runtime/index.js';
import { createRuntime, runCode, source, type TestRuntime } from './helpers.js';

let t: TestRuntime;
beforeAll(() => {
  t = createRuntime({ poolSize: 1 });
});
afterAll(async () => {
  await t.close();
});

const ACCOUNT = 'acct_stores';
const withStore = (body: string) => source(body, 'props: { store: { type: "data_store" }, other: { type: "data_store", optional: true } },');
const contents = (entries: Array<[string, unknown]>) => [{ name: 'orders', entries }];

describe('data_store props', () => {
  it('reads the loaded contents and reports the writes of a successful call', async () => {
    const code = withStore(`
      const s = this.store;
      const seen = { a: await s.get("a"), missing: await s.get("missing"), has: await s.has("a"), keys: await s.keys() };
      await s.set("b", { n: 2 });
      await s.set("a", undefined);
      await s.set("c", 3, { ttl: 60 });
      await s.setTtl("b", 10);
      seen.after = await s.entries();
      const iterated = [];
      for await (const [k, v] of s) iterated.push(k + "=" + JSON.stringify(v));
      seen.iterated = iterated;
      seen.deletedMissing = await s.delete("zzz");
      this.$emit(seen);`);
    const result = await runCode(t.runtime, ACCOUNT, code, { props: { store: 'orders' }, dataStores: contents([['a', 1]]) });
    expect(result.outcomes[0]!.error).toBeUndefined();
    expect(result.outcomes[0]!.emits[0]!.event).toEqual({
      a: 1,
      has: true,
      keys: ['a'],
      after: [
        ['b', { n: 2 }],
        ['c', 3],
      ],
      iterated: ['b={"n":2}', 'c=3'],
      deletedMissing: false,
    });
    expect(result.dataStoreWrites).toEqual([
      {
        name: 'orders',
        cleared: false,
        writes: [
          { key: 'b', op: 'set', value: { n: 2 }, ttlSeconds: 10 },
          { key: 'a', op: 'delete' },
          { key: 'c', op: 'set', value: 3, ttlSeconds: 60 },
          { key: 'zzz', op: 'delete' },
        ],
      },
    ]);
  });

  it('lets later events of a batch see the writes of earlier ones, and drops the writes of a failed one', async () => {
    const code = withStore(`
      if (event.clear) await this.store.clear();
      await this.store.set(event.key, event.key);
      if (event.fail) throw new Error("failed after writing");
      this.$emit(await this.store.keys());`);
    const component = await t.runtime.prepare(code);
    const result = await t.runtime.invoke({
      accountId: ACCOUNT,
      sourceId: 'dc_x',
      component,
      method: 'run',
      events: [{ key: 'x' }, { key: 'y', fail: true }, { key: 'z', clear: true }, { key: 'w' }],
      props: { store: 'orders' },
      auths: {},
      db: {},
      dataStores: contents([['old', 0]]),
      timeoutMs: 10_000,
    });
    expect(result.outcomes.map((o) => o.emits[0]?.event ?? o.error?.message)).toEqual([['old', 'x'], 'failed after writing', ['z'], ['z', 'w']]);
    expect(result.dataStoreWrites).toEqual([
      {
        name: 'orders',
        cleared: true,
        writes: [
          { key: 'z', op: 'set', value: 'z' },
          { key: 'w', op: 'set', value: 'w' },
        ],
      },
    ]);
  });

  it('refuses bad keys, values and ttls, and a store that was not loaded', async () => {
    const code = withStore(`
      const errors = [];
      for (const attempt of [() => this.store.set("", 1), () => this.store.set("k", () => 1), () => this.store.set("k", 1, { ttl: -1 }), () => this.other.get("k"), () => this.store.set("k", 1, { ttl: "t".repeat(300) }), () => this.store.set("k", 1, ["o".repeat(300)])]) {
        try { await attempt(); } catch (error) { errors.push(error.message); }
      }
      this.$emit(errors);`);
    const result = await runCode(t.runtime, ACCOUNT, code, { props: { store: 'orders', other: 'elsewhere' }, dataStores: contents([]) });
    expect(result.outcomes[0]!.emits[0]!.event).toEqual([
      'data store keys must be non-empty strings',
      'the value for data store key "k" is not JSON-serialisable: a function',
      'a data store ttl is a positive number of seconds (or null for none), not -1',
      'data store "elsewhere" was not loaded for this run call',
      // What the component gave, quoted as every value in a message is: its first 100 characters, then its length.
      `a data store ttl is a positive number of seconds (or null for none), not "${'t'.repeat(100)}"… (300 characters)`,
      `data store set() takes its options as { ttl }, not ["${'o'.repeat(98)}… (304 characters)`,
    ]);
    expect(result.dataStoreWrites).toBeUndefined();
  });

  it('fails the call that grows a store past its limit, even if the component catches the error', async () => {
    const code = withStore(`
      try { await this.store.set("big", "x".repeat(900 * 1024)); for (let i = 0; i < 5; i++) await this.store.set("big" + i, "x".repeat(900 * 1024)); } catch {}
      this.$emit("went on");`);
    const result = await runCode(t.runtime, ACCOUNT, code, { props: { store: 'orders' }, dataStores: contents([]) });
    expect(result.outcomes[0]!.error?.message).toBe('data store "orders" may hold at most 4194304 bytes of JSON');
    expect(result.dataStoreWrites).toBeUndefined();
  });

  it("counts a call's writes as what it leaves set, across its stores, as the server does", async () => {
    // Nine overwrites of one 1 MB record, and a record set and deleted again, leave 1 MB to write: the call goes on.
    const overwrites = withStore(`
      for (let i = 0; i < 9; i++) await this.store.set("k", "x".repeat(1000 * 1000));
      for (let i = 0; i < 3; i++) await this.store.set("gone", "y".repeat(1000 * 1000));
      await this.store.delete("gone");
      await this.store.set("cleared", "w".repeat(1000 * 1000));
      await this.store.clear();
      await this.store.set("k", "x".repeat(1000 * 1000));
      this.$emit((await this.store.get("k")).length);`);
    const kept = await runCode(t.runtime, ACCOUNT, overwrites, { props: { store: 'orders' }, dataStores: contents([]) });
    expect(kept.outcomes[0]!.error).toBeUndefined();
    expect(kept.outcomes[0]!.emits[0]!.event).toBe(1000 * 1000);
    expect(kept.dataStoreWrites).toEqual([{ name: 'orders', cleared: true, writes: [{ key: 'k', op: 'set', value: 'x'.repeat(1000 * 1000) }] }]);
    // Three stores of 3 MB each are 9 MB, past the 8 MB one call may write, though each store is within its 4 MB.
    const spread = source(
      `try {
        for (const s of [this.a, this.b, this.c]) for (let i = 0; i < 3; i++) await s.set("r" + i, "z".repeat(1000 * 1000));
      } catch {}
      this.$emit("went on");`,
      'props: { a: { type: "data_store" }, b: { type: "data_store" }, c: { type: "data_store" } },',
    );
    const stores = ['a', 'b', 'c'].map((name) => ({ name, entries: [] as Array<[string, unknown]> }));
    const refused = await runCode(t.runtime, ACCOUNT, spread, { props: { a: 'a', b: 'b', c: 'c' }, dataStores: stores });
    expect(refused.outcomes[0]!.error?.message).toBe('one call may write at most 8388608 bytes of JSON to data stores');
    expect(refused.outcomes[0]!.emits).toEqual([]);
    expect(refused.dataStoreWrites).toBeUndefined();
  });

  it('refuses every write while props are configured, each in the words of the method the component called', async () => {
    const code = `module.exports = { name: "configuring", version: "1.0.0", props: {
      store: { type: "data_store" },
      pick: { type: "string", async options() {
        const errors = [await this.store.get("a")];
        for (const attempt of [() => this.store.set("a", 2), () => this.store.set("a", undefined), () => this.store.delete("a"), () => this.store.clear(), () => this.store.setTtl("a", 5)]) {
          try { await attempt(); errors.push("wrote"); } catch (error) { errors.push(error.message); }
        }
        return errors.map(String);
      } },
    }, async run() {} };`;
    const component = await t.runtime.prepare(code);
    const answer = await t.runtime.propOptions(
      { accountId: ACCOUNT, component, asStep: false, props: { store: 'orders' }, auths: {}, dataStores: contents([['a', 1]]) },
      { prop: 'pick', page: 0, prevContext: {} },
    );
    const refused = (method: string) => `data store "orders" is read-only while props are configured: ${method}() is refused`;
    expect(answer.options).toEqual(['1', refused('set'), refused('set'), refused('delete'), refused('clear'), refused('setTtl')]);
  });

  it('refuses a { name } with any other field, as a deploy does, rather than dropping the field', async () => {
    const code = withStore(`try { await this.store.set("k", 1); this.$emit("stored"); } catch (error) { this.$emit(error.name + ": " + error.message); }`);
    const result = await runCode(t.runtime, ACCOUNT, code, { props: { store: { name: 'orders', ttl: 60 } }, dataStores: contents([]) });
    expect(result.outcomes[0]!.emits[0]!.event).toBe(
      'TypeError: a data store is named by a string of 1 to 200 characters (not blank, without control characters) or { name }, not {"name":"orders","ttl":60}',
    );
    expect(result.dataStoreWrites).toBeUndefined();
  });

  it('merges changes key by key: a clear drops what came before, a ttl change amends a set', () => {
    expect(
      mergeDataStoreChanges(
        [{ name: 's', cleared: false, writes: [{ key: 'a', op: 'set', value: 1 }] }],
        [{ name: 's', cleared: false, writes: [{ key: 'a', op: 'ttl', ttlSeconds: 5 }] }],
        [{ name: 't', cleared: true, writes: [] }],
      ),
    ).toEqual([
      { name: 's', cleared: false, writes: [{ key: 'a', op: 'set', value: 1, ttlSeconds: 5 }] },
      { name: 't', cleared: true, writes: [] },
    ]);
  });
});
