// An update whose new activate() throws runs the old code's activate() again, so that what the old deactivate() took
// down (a webhook registered with another service, here a receiver in the test process) is set up anew and kept.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';

/** Registers a "webhook" with the receiver on activate() and removes it on deactivate(), keeping its id in the db. */
const WEBHOOK_SOURCE = `
export default {
  name: "webhook keeper",
  version: "0.0.1",
  props: {
    db: "$.service.db",
    receiver: { type: "string" },
    label: { type: "string" },
    failActivate: { type: "boolean", optional: true, default: false },
  },
  hooks: {
    async activate() {
      const n = (this.db.get("hook") || 0) + 1;
      const res = await fetch(this.receiver + "/up/" + this.label + "/" + n, { method: "POST" });
      if (!res.ok) throw new Error("receiver said " + res.status);
      if (this.failActivate) throw new Error("cannot register");
      const webhook = "wh-" + this.label + "-" + n;
      this.db.set("hook", n);
      this.db.set("webhook", webhook);
      console.log("registered " + webhook);
      this.$emit({ registered: webhook }, { id: webhook });
    },
    async deactivate() {
      await fetch(this.receiver + "/down/" + this.db.get("webhook"), { method: "POST" });
      this.db.set("webhook", "none");
    },
  },
  async run() {},
};
`;

describe.each(DIALECTS)('an update whose activate() fails on %s', (dialect) => {
  let server: TestServer;
  let api: ReturnType<typeof client>;
  let receiver: http.Server;
  let receiverUrl = '';
  /** What the hooks told the receiver, in order. */
  const calls: string[] = [];
  let refusing = false;

  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      calls.push(req.url ?? '');
      res.statusCode = refusing && req.url?.startsWith('/up/') ? 503 : 200;
      res.end();
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    server = await startTestServer(dialect, { allowPrivateNetwork: true });
    api = client(server.url, (await server.createUser()).apiKey);
  });
  afterAll(async () => {
    await server?.destroy();
    await new Promise((resolve) => receiver?.close(resolve));
  });

  async function sourceDb(sourceId: string): Promise<Record<string, unknown>> {
    const rows = await server.running.services.store.db.selectFrom('source_db').select(['key', 'value']).where('source_id', '=', sourceId).execute();
    return Object.fromEntries(rows.map((row) => [row.key, JSON.parse(row.value)]));
  }
  const deploy = async (label: string) => {
    calls.length = 0;
    const res = await api.post('/v1/sources', { component_code: WEBHOOK_SOURCE, configured_props: { receiver: receiverUrl, label } });
    expect(res.status).toBe(200);
    return res.body.data.id as string;
  };
  const put = (id: string, props: object) =>
    api.put(`/v1/sources/${id}`, { component_code: WEBHOOK_SOURCE, configured_props: { receiver: receiverUrl, ...props } });

  it('runs the old activate() again and commits what it did, then later updates run as before', async () => {
    const id = await deploy('a');
    const before = (await api.get(`/v1/sources/${id}`)).body.data;
    const refused = await put(id, { label: 'b', failActivate: true });
    expect([refused.status, refused.body]).toEqual([
      422,
      {
        error: 'activate() hook failed: Error: cannot register',
        code: 'hook_failed',
        details: [{ hook: 'activate', error: { name: 'Error', message: 'cannot register', stack: expect.stringContaining('cannot register') }, logs: [] }],
      },
    ]);
    // Down with the old code, up with the new one (which threw), up again with the old one.
    expect(calls).toEqual(['/up/a/1', '/down/wh-a-1', '/up/b/2', '/up/a/2']);
    expect((await api.get(`/v1/sources/${id}`)).body.data).toEqual(before);
    expect(await sourceDb(id)).toEqual({ hook: 2, webhook: 'wh-a-2' });
    const events = (await api.get(`/v1/sources/${id}/event_summaries`)).body.data.map((e: { event: unknown }) => e.event);
    expect(events).toEqual([{ registered: 'wh-a-2' }, { registered: 'wh-a-1' }]);
    const logs = (await api.get(`/v1/sources/${id}/$logs/event_summaries`)).body.data.map((e: { event: { msg: string } }) => e.event.msg);
    expect(logs).toEqual(['registered wh-a-2', 'registered wh-a-1']);

    calls.length = 0;
    const replaced = await put(id, { label: 'c' });
    expect([replaced.status, replaced.body.data?.configured_props.label]).toEqual([200, 'c']);
    expect(calls).toEqual(['/down/wh-a-2', '/up/c/3']);
    expect(await sourceDb(id)).toEqual({ hook: 3, webhook: 'wh-c-3' });
  });

  it('answers the same 422 saying the old activate() failed too, its error on $errors and what deactivate() wrote kept', async () => {
    const id = await deploy('x');
    const before = (await api.get(`/v1/sources/${id}`)).body.data;
    refusing = true;
    const refused = await put(id, { label: 'y' }).finally(() => {
      refusing = false;
    });
    const error = { name: 'Error', message: 'receiver said 503', stack: expect.stringContaining('receiver said 503') };
    expect([refused.status, refused.body]).toEqual([
      422,
      {
        error:
          "activate() hook failed: Error: receiver said 503; the replaced code's activate(), run again to restore what its deactivate() took down, failed as well: Error: receiver said 503",
        code: 'hook_failed',
        details: [
          { hook: 'activate', error, logs: [] },
          { hook: 'activate', restoring: true, error, logs: [] },
        ],
      },
    ]);
    expect(calls).toEqual(['/up/x/1', '/down/wh-x-1', '/up/y/2', '/up/x/2']);
    expect((await api.get(`/v1/sources/${id}`)).body.data).toEqual(before);
    expect(await sourceDb(id)).toEqual({ hook: 1, webhook: 'none' });
    const errors = (await api.get(`/v1/sources/${id}/$errors/event_summaries`)).body.data.map(
      (e: { event: { error: { message: string }; original_context: { trigger: string } } }) => [e.event.original_context.trigger, e.event.error.message],
    );
    expect(errors).toEqual([['activate', 'receiver said 503']]);
  });
});
