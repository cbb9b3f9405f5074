// An update whose new activate() throws runs the old code's activate() again, so that what the old deactivate() took
// down (a webhook registered with another service, here a receiver in the test process) is set up anew and kept.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiResponse, client } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

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

describe.each(DIALECTS)('hooks of a change that fails, undone and restored, on %s', (dialect) => {
  let server: TestServer;
  let api: ReturnType<typeof client>;
  let receiver: http.Server;
  let receiverUrl = '';
  /** What the hooks told the receiver, in order. */
  const calls: string[] = [];
  let refusing = false;
  /** While set, a request for this path is held unanswered until `releaseHeld` is called. */
  let holding: { path: string; held: Promise<void>; release: () => void } | undefined;

  beforeAll(async () => {
    receiver = http.createServer(async (req, res) => {
      calls.push(req.url ?? '');
      if (holding && holding.path === req.url) await holding.held;
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

  /** WEBHOOK_SOURCE with an app prop, and a connected account for it. */
  const withAccount = WEBHOOK_SOURCE.replace('props: {', 'props: {\n    acme: { type: "app", app: "acme" },');
  const newAccountId = async () =>
    (await api.post('/v1/accounts', { app: 'acme', name: 'Acme', credentials: { api_key: 'k-1234567890' } })).body.data.id as string;
  /**
   * Sends `change` with the receiver holding the request to `path` (an activate()) while the connected account is
   * deleted: not yet in use by the source, nothing refuses the delete, and the change's save then finds it gone.
   */
  async function deletingAccountDuring(path: string, accountId: string, change: () => Promise<ApiResponse>) {
    let release = () => {};
    holding = { path, held: new Promise<void>((resolve) => (release = resolve)), release };
    const reached = waitFor(
      async () => calls,
      (seen) => seen.includes(path),
      { what: `the call to ${path}` },
    );
    const answer = change();
    await reached;
    expect((await api.delete(`/v1/accounts/${accountId}`)).status).toBe(204);
    holding.release();
    return answer.finally(() => {
      holding = undefined;
    });
  }

  it("undoes the new activate() and restores the old one when the save fails after them (the new code's connected account deleted meanwhile)", async () => {
    const id = await deploy('p');
    const before = (await api.get(`/v1/sources/${id}`)).body.data;
    const acmeId = await newAccountId();
    const refused = await deletingAccountDuring('/up/q/2', acmeId, () =>
      api.put(`/v1/sources/${id}`, { component_code: withAccount, configured_props: { receiver: receiverUrl, label: 'q', acme: { authProvisionId: acmeId } } }),
    );
    expect([refused.status, refused.body]).toEqual([
      404,
      {
        error: `connected account "${acmeId}" not found`,
        code: 'not_found',
        details: [{ prop: 'acme', message: `names connected account "${acmeId}", which is not found` }],
      },
    ]);
    // Down with the old code, up with the new one, then down with the new one and up again with the old one.
    expect(calls).toEqual(['/up/p/1', '/down/wh-p-1', '/up/q/2', '/down/wh-q-2', '/up/p/2']);
    expect((await api.get(`/v1/sources/${id}`)).body.data).toEqual(before);
    expect(await sourceDb(id)).toEqual({ hook: 2, webhook: 'wh-p-2' });
    const events = (await api.get(`/v1/sources/${id}/event_summaries`)).body.data.map((e: { event: unknown }) => e.event);
    expect(events).toEqual([{ registered: 'wh-p-2' }, { registered: 'wh-p-1' }]);
  });

  it("takes down what a new source's activate() set up when its save fails, with the credentials activate() had", async () => {
    const acmeId = await newAccountId();
    calls.length = 0;
    const refused = await deletingAccountDuring('/up/n/1', acmeId, () =>
      api.post('/v1/sources', {
        name: 'never saved',
        component_code: withAccount,
        configured_props: { receiver: receiverUrl, label: 'n', acme: { authProvisionId: acmeId } },
      }),
    );
    expect([refused.status, refused.body.code]).toEqual([404, 'not_found']);
    expect(calls).toEqual(['/up/n/1', '/down/wh-n-1']);
    const names = (await api.get('/v1/users/me/sources?limit=100')).body.data.map((s: { name: string }) => s.name);
    expect(names).not.toContain('never saved');
  });
});
