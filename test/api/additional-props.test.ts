// Deploys with values for the props additionalProps() adds: sources and workflow steps are checked against the full
// prop list for the answers given (every problem in one 422), runs see the added values in `this`, the API echoes
// them (secrets masked, sealed at rest), and an update that changes a `reloadProps` answer recomputes the list.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { componentServer } from '../helpers/prop-configuration.js';
import { DIALECTS } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { workflowCalls } from '../helpers/workflows.js';

/** A source whose props after `shape` depend on its answer; `run` emits what `this` holds. */
const SHAPED = `
module.exports = {
  name: "shaped",
  version: "1.0.0",
  props: {
    shape: { type: "string", options: ["circle", "square"], reloadProps: true },
    label: { type: "string", optional: true },
  },
  async additionalProps(previous) {
    if (!previous.shape) throw new Error("additionalProps() got no previous props");
    if (!this.shape) throw new Error("choose a shape first");
    if (this.shape === "circle") return { radius: { type: "integer", min: 1, max: 100 }, token: { type: "string", secret: true } };
    if (this.shape === "square") return { side: { type: "integer" }, color: { type: "string", options: ["red", "blue"], optional: true } };
    return {};
  },
  async run() {
    const { shape, radius, token, side, color } = this;
    this.$emit({ shape, radius: radius ?? null, token: token ?? null, side: side ?? null, color: color ?? null });
  },
};`;

/** A code step whose `mode` answer adds props; it returns what `this` holds. */
const STYLED_STEP = `
export default defineComponent({
  props: { mode: { type: "string", options: ["plain", "fancy"], reloadProps: true } },
  async additionalProps() {
    return this.mode === "fancy" ? { decoration: { type: "string" }, key: { type: "string", secret: true } } : {};
  },
  async run({ steps, $ }) {
    return { mode: this.mode, decoration: this.decoration ?? null, key: this.key ?? null };
  },
});`;

/** A source that adds a prop the run could not give (a data store). */
const ADDS_A_STORE = `
module.exports = {
  name: "adds a store",
  version: "1.0.0",
  props: { on: { type: "boolean", reloadProps: true } },
  async additionalProps() { return this.on ? { store: { type: "data_store" } } : {}; },
  async run() {},
};`;

describe.each(DIALECTS)('deploys with additional props on %s', (dialect) => {
  const t = componentServer(dialect, SHAPED);
  const { create, finishedRuns } = workflowCalls(() => t.api);

  /** Runs the source by hand and returns what it emitted. */
  async function emitted(sourceId: string): Promise<any> {
    const before = (await t.api.get(`/v1/sources/${sourceId}/event_summaries?limit=100`)).body.data.length;
    expect((await t.api.post(`/v1/sources/${sourceId}/run`, {})).status).toBe(202);
    const res = await waitFor(
      () => t.api.get(`/v1/sources/${sourceId}/event_summaries?limit=100&expand=event`),
      (r) => r.body.data.length > before,
      { what: 'the run to emit' },
    );
    return res.body.data[0].event;
  }

  it('deploys a source with values for added props: the run sees them, the API echoes them, secrets masked and sealed', async () => {
    const res = await t.api.post('/v1/sources', { component_id: t.componentId, configured_props: { shape: 'circle', radius: 5, token: 'tok-circle-1' } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.configured_props).toEqual({ shape: 'circle', radius: 5, token: '********' });
    const id = res.body.data.id;
    expect((await t.api.get('/v1/users/me/sources')).body.data.find((s: { id: string }) => s.id === id).configured_props.token).toBe('********');
    expect(await emitted(id)).toEqual({ shape: 'circle', radius: 5, token: 'tok-circle-1', side: null, color: null });

    const db = t.server.running.services.store.db;
    const row = await db.selectFrom('sources').select(['configured_props', 'additional_props']).where('id', '=', id).executeTakeFirstOrThrow();
    expect(row.configured_props).not.toContain('tok-circle-1');
    expect(JSON.parse(row.configured_props).token).toMatch(/^enc:v2:/);
    expect(JSON.parse(row.additional_props!).map((p: { name: string }) => p.name)).toEqual(['radius', 'token']);
    if (dialect === 'postgres') {
      const { rows } = await sql<{ t: string }>`select t::text as t from sources t`.execute(db);
      for (const { t } of rows) expect(t).not.toContain('tok-circle-1');
    }
  });

  it('refuses wrong values for added props, and values for props the answers do not add, in one 422', async () => {
    const wrong = await t.api.post('/v1/sources', { component_id: t.componentId, configured_props: { shape: 'circle', radius: 500, token: 7 } });
    expect(wrong.status).toBe(422);
    expect(wrong.body.code).toBe('props_invalid');
    expect(wrong.body.details).toEqual([
      { prop: 'radius', message: 'must be at most 100, got 500' },
      { prop: 'token', message: 'must be a string, got a number' },
    ]);
    const foreign = await t.api.post('/v1/sources', { component_id: t.componentId, configured_props: { shape: 'square', side: 3, radius: 5 } });
    expect(foreign.status).toBe(422);
    expect(foreign.body.details).toEqual([{ prop: 'radius', message: 'is not a prop of this component' }]);
    const missing = await t.api.post('/v1/sources', { component_id: t.componentId, configured_props: { shape: 'square', color: 'green' } });
    expect(missing.body.details).toEqual([
      { prop: 'side', message: 'is required' },
      { prop: 'color', message: 'must be one of "red", "blue", got "green"' },
    ]);
    // The placeholder keeps a stored secret; with none stored it is refused rather than becoming the secret.
    const placeholder = await t.api.post('/v1/sources', { component_id: t.componentId, configured_props: { shape: 'circle', radius: 5, token: '********' } });
    expect(placeholder.status).toBe(422);
    expect(placeholder.body.details).toEqual([{ prop: 'token', message: 'is "********", which keeps a stored secret, but none is stored: give the value' }]);
    // additionalProps() that throws for the answers given is the deploy's 422, with what it threw.
    const thrown = await t.api.post('/v1/sources', { component_id: t.componentId, configured_props: {} });
    expect(thrown.status).toBe(422);
    expect(thrown.body.details).toEqual([{ prop: 'additionalProps()', message: 'Error: choose a shape first' }]);
    // A static answer the deploy refuses is its own 422: additionalProps() never sees it (it would throw, blaming itself).
    const refused = await t.api.post('/v1/sources', { component_id: t.componentId, configured_props: { shape: 'triangle', radius: 5 } });
    expect([refused.status, refused.body]).toEqual([
      422,
      {
        error: 'invalid configured_props: shape must be one of "circle", "square", got "triangle"',
        code: 'props_invalid',
        details: [{ prop: 'shape', message: 'must be one of "circle", "square", got "triangle"' }],
      },
    ]);
  });

  it('recomputes the added props when an update changes a reloadProps answer, and keeps them when it does not', async () => {
    const res = await t.api.post('/v1/sources', { component_id: t.componentId, configured_props: { shape: 'circle', radius: 5, token: 'tok-circle-2' } });
    const id = res.body.data.id;
    // The same answers: the secret's placeholder keeps it, the added props hold without asking the component.
    const kept = await t.api.patch(`/v1/sources/${id}`, { configured_props: { shape: 'circle', radius: 9, token: '********' } });
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
    expect(await emitted(id)).toEqual({ shape: 'circle', radius: 9, token: 'tok-circle-2', side: null, color: null });
    expect((await t.api.patch(`/v1/sources/${id}`, { active: false })).body.data.configured_props).toEqual({ shape: 'circle', radius: 9, token: '********' });

    const squared = await t.api.put(`/v1/sources/${id}`, { component_id: t.componentId, configured_props: { shape: 'square', side: 4, color: 'blue' } });
    expect(squared.status, JSON.stringify(squared.body)).toBe(200);
    expect(squared.body.data.configured_props).toEqual({ shape: 'square', side: 4, color: 'blue' });
    expect(await emitted(id)).toEqual({ shape: 'square', radius: null, token: null, side: 4, color: 'blue' });
    const stale = await t.api.patch(`/v1/sources/${id}`, { configured_props: { shape: 'square', side: 4, radius: 9 } });
    expect(stale.status).toBe(422);
    expect(stale.body.details).toEqual([{ prop: 'radius', message: 'is not a prop of this component' }]);
  });

  it('refuses an added prop that a run could not be given', async () => {
    const res = await t.api.post('/v1/sources', { component_code: ADDS_A_STORE, configured_props: { on: true, store: 'orders' } });
    expect(res.status).toBe(422);
    expect(res.body.details).toEqual([
      {
        prop: 'store',
        message:
          'is a prop of type data_store added by additionalProps(); props it adds may only be of types string, integer, boolean, object or any (or arrays of them), or alerts',
      },
    ]);
    expect((await t.api.post('/v1/sources', { component_code: ADDS_A_STORE, configured_props: { on: false } })).status).toBe(200);
  });

  it('deploys a workflow step with values for added props, templates included, and recomputes them on update', async () => {
    const fancy = { mode: 'fancy', decoration: '{{ steps.trigger.event.body.d }}', key: 'key-fancy-1' };
    const workflow = await create({ name: 'styled', steps: [{ name: 'style', component_code: STYLED_STEP, configured_props: fancy }] });
    expect(workflow.steps[0].configured_props).toEqual({ mode: 'fancy', decoration: '{{ steps.trigger.event.body.d }}', key: '********' });
    const steps = await t.server.running.services.store.db.selectFrom('workflows').select('steps').where('id', '=', workflow.id).executeTakeFirstOrThrow();
    expect(steps.steps).not.toContain('key-fancy-1');
    await t.api.post(`/v1/workflows/${workflow.id}/run`, { body: { d: 'stars' } });
    const [first] = await finishedRuns(workflow.id, 1);
    expect(first.status, JSON.stringify(first)).toBe('succeeded');
    expect(first.steps[0].$return_value).toEqual({ mode: 'fancy', decoration: 'stars', key: 'key-fancy-1' });

    const styleStep = (configured_props: object) => ({ steps: [{ name: 'style', component_code: STYLED_STEP, configured_props }] });
    const wrong = await t.api.put(`/v1/workflows/${workflow.id}`, styleStep({ mode: 'fancy', decoration: 5, key: '********' }));
    expect(wrong.status).toBe(422);
    expect(wrong.body.details).toEqual([{ prop: 'decoration', message: 'must be a string, got a number' }]);
    expect(wrong.body.error).toMatch(/^steps\[0\] \("style"\): invalid configured_props/);
    const foreign = await t.api.put(`/v1/workflows/${workflow.id}`, styleStep({ mode: 'plain', decoration: 'x' }));
    expect(foreign.body.details).toEqual([{ prop: 'decoration', message: 'is not a prop of this component' }]);
    const templated = await t.api.put(`/v1/workflows/${workflow.id}`, styleStep({ mode: 'plain', key: '{{ steps.trigger.event.body.d }}' }));
    // Said as the other refusals are, with its detail (it had none, and another wording).
    expect([templated.status, templated.body.error, templated.body.details]).toEqual([
      422,
      'steps[0] ("style"): invalid configured_props: key is not a prop of this component',
      [{ prop: 'key', message: 'is not a prop of this component' }],
    ]);

    // The placeholder keeps the secret while the answers stay; a new answer recomputes the list.
    const kept = await t.api.put(`/v1/workflows/${workflow.id}`, styleStep({ mode: 'fancy', decoration: 'plain text', key: '********' }));
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
    await t.api.post(`/v1/workflows/${workflow.id}/run`, { body: {} });
    expect((await finishedRuns(workflow.id, 2))[0].steps[0].$return_value).toEqual({ mode: 'fancy', decoration: 'plain text', key: 'key-fancy-1' });
    const plain = await t.api.put(`/v1/workflows/${workflow.id}`, styleStep({ mode: 'plain' }));
    expect(plain.status, JSON.stringify(plain.body)).toBe(200);
    expect(plain.body.data.steps[0].configured_props).toEqual({ mode: 'plain' });
    await t.api.post(`/v1/workflows/${workflow.id}/run`, { body: {} });
    expect((await finishedRuns(workflow.id, 3))[0].steps[0].$return_value).toEqual({ mode: 'plain', decoration: null, key: null });
  });
});
