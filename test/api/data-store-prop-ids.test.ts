// A data_store prop names its store by name: given the `ds_` id the API lists one of the account's stores by, a deploy
// (source create and update, workflow step) is a 422 naming the store's name, where it used to make a second store
// named after the id, which the API's routes by name or id could no longer reach by that name.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../helpers/client.js';
import { recordPath, runStoreSource } from '../helpers/data-store-sources.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';

const SOURCE = `module.exports = { name: "reader", version: "1.0.0", props: { store: { type: "data_store" } },
  async run() { this.$emit({ keys: await this.store.keys() }); } };`;

const STEP = `export default defineComponent({ props: { store: { type: "data_store" } }, async run() { return this.store.keys(); } })`;

describe.each(DIALECTS)('a data_store prop given a store id on %s', (dialect) => {
  let server: TestServer;
  let api: ReturnType<typeof client>;
  let other: ReturnType<typeof client>;
  let ordersId: string;

  beforeAll(async () => {
    server = await startTestServer(dialect);
    api = client(server.url, (await server.createUser({ plan: 'paid' })).apiKey);
    other = client(server.url, (await server.createUser({ plan: 'paid' })).apiKey);
    expect((await api.put(recordPath('orders', 'a'), { value: 1 })).status).toBe(200);
    ordersId = (await api.get('/v1/data_stores/orders/keys')).body.data.id;
  });
  afterAll(async () => {
    await server?.destroy();
  });

  const refusal = (label = '') => {
    const message = `names data store ${ordersId} by its id; a data_store prop takes the store's name: "orders"`;
    return { error: `${label}invalid configured_props: store ${message}`, code: 'props_invalid', details: [{ prop: 'store', message }] };
  };

  it("refuses a source whose data_store prop gives the id of one of the account's stores, and makes no store", async () => {
    for (const store of [ordersId, { name: ordersId }]) {
      const res = await api.post('/v1/sources', { component_code: SOURCE, configured_props: { store } });
      expect([res.status, res.body]).toEqual([422, refusal()]);
    }
    const deployed = await api.post('/v1/sources', { component_code: SOURCE, configured_props: { store: 'orders' } });
    expect(deployed.status).toBe(200);
    const changed = await api.patch(`/v1/sources/${deployed.body.data.id}`, { configured_props: { store: ordersId } });
    expect([changed.status, changed.body]).toEqual([422, refusal()]);
    expect(await runStoreSource(api, deployed.body.data.id, {})).toEqual({ keys: ['a'] });
    const stores = (await api.get('/v1/data_stores')).body.data.map((s: { name: string }) => s.name);
    expect(stores).toEqual(['orders']);
  });

  it("refuses it in a workflow step, naming the step, and takes another account's store id as a name", async () => {
    const res = await api.post('/v1/workflows', {
      name: 'ids',
      trigger: { type: 'http', custom_response: false },
      steps: [{ name: 'read', component_code: STEP, configured_props: { store: ordersId } }],
    });
    expect([res.status, res.body]).toEqual([422, refusal('steps[0] ("read"): ')]);
    // Another account has no store of that id: to it the id is a name like any other, and says nothing of the store.
    const elsewhere = await other.post('/v1/sources', { component_code: SOURCE, configured_props: { store: ordersId } });
    expect(elsewhere.status).toBe(200);
    expect(elsewhere.body.data.configured_props).toEqual({ store: ordersId });
  });
});
