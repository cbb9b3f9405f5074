// `tributary activate` and `deactivate` switch a source or workflow on and off (the API's PATCH / PUT with `active`),
// and a run refused because the source is off names the command that switches it on.
import { beforeAll, describe, expect, it } from 'vitest';
import { clientFixture } from '../helpers/cli.js';
import { client } from '../helpers/client.js';

const SOURCE = `module.exports = { name: "switched", version: "0.1.0", props: { http: "$.interface.http" }, async run(e) { this.$emit(e); } };`;
const STEP = `export default defineComponent({ async run({ steps }) { return steps.trigger.event; } });`;

describe('tributary activate and deactivate', () => {
  const cli = clientFixture('tributary-activate-', { signedIn: true });
  const tributary = (args: string[]) => cli.run(args);
  let api: ReturnType<typeof client>;
  beforeAll(() => {
    api = client(cli.server.url, cli.key);
  });

  it('switches a source off and on, and a run of it while off says how to switch it on', async () => {
    const id = (await api.post('/v1/sources', { component_code: SOURCE })).body.data.id;
    expect(await tributary(['deactivate', id])).toMatchObject({ code: 0, stdout: `deactivated ${id}\n`, stderr: '' });
    expect((await api.get(`/v1/sources/${id}`)).body.data.active).toBe(false);
    const refused = await tributary(['run', id]);
    expect([refused.code, refused.stdout, refused.stderr]).toEqual([
      2,
      '',
      `error: source "${id}" is inactive; activate it with PATCH /v1/sources/${id} {"active": true} (409 conflict)\nhint: tributary activate ${id} switches it on\n`,
    ]);
    expect(await tributary(['activate', id])).toMatchObject({ code: 0, stdout: `activated ${id}\n`, stderr: '' });
    expect((await api.get(`/v1/sources/${id}`)).body.data.active).toBe(true);
    expect((await tributary(['run', id])).code).toBe(0);
  });

  it('switches a workflow off and on, keeping its steps', async () => {
    const created = (await api.post('/v1/workflows', { name: 'flow', steps: [{ name: 'echo', component_code: STEP }] })).body.data;
    expect(await tributary(['deactivate', created.id])).toMatchObject({ code: 0, stdout: `deactivated ${created.id}\n` });
    expect((await api.get(`/v1/workflows/${created.id}`)).body.data).toEqual({ ...created, active: false, updated_at: expect.any(Number) });
    expect(await tributary(['activate', created.id])).toMatchObject({ code: 0, stdout: `activated ${created.id}\n` });
    expect((await api.get(`/v1/workflows/${created.id}`)).body.data).toEqual({ ...created, updated_at: expect.any(Number) });
  });

  it('refuses an id that is not a source or workflow, and an unknown one', async () => {
    const webhook = await tributary(['activate', 'wh_abc']);
    expect([webhook.code, webhook.stderr]).toEqual([2, 'error: activate takes a source (dc_…) or workflow (p_…) id, not "wh_abc"\n']);
    const unknown = await tributary(['deactivate', 'dc_nope']);
    expect([unknown.code, unknown.stderr.split('\n')[0]]).toEqual([3, 'error: source "dc_nope" not found (404 not_found)']);
  });
});
