// An error message quotes what was sent, but a long value only by its first 100 characters and its length: a 400 KB
// cron, time zone or id does not come back whole in the error body.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { client } from '../helpers/client.js';
import { PROPS_SOURCE } from '../helpers/components.js';

const LONG = 400 * 1024;
const STEP = 'export default { async run() { return 1 } }';
const head = (c: string) => c.repeat(100);

describe('long input in error messages', () => {
  let server: TestServer;
  let api: ReturnType<typeof client>;
  let key: string;

  beforeAll(async () => {
    server = await startTestServer('sqlite', { rateLimit: 0 });
    key = (await server.createUser()).apiKey;
    api = client(server.url, key);
  });
  afterAll(() => server?.destroy());

  const deploy = (timer: unknown) => api.post('/v1/sources', { component_code: PROPS_SOURCE, configured_props: { token: 't', count: 1, color: 'red', timer } });

  it('a long cron is quoted by its first 100 characters and its length', async () => {
    const res = await deploy({ cron: `${'1'.repeat(LONG)} * * * *` });
    const quoted = `"${head('1')}"… (${LONG + 8} characters)`;
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('props_invalid');
    expect(res.body.details).toHaveLength(1);
    expect(res.body.details[0].prop).toBe('timer');
    expect(res.body.details[0].message.startsWith(`invalid cron expression ${quoted}: `)).toBe(true);
    expect(JSON.stringify(res.body).length).toBeLessThan(2000);
  });

  it('a long cron of the wrong shape and a long time zone', async () => {
    const shape = await deploy({ cron: 'x'.repeat(LONG) });
    expect(shape.status).toBe(422);
    expect(shape.body.details).toEqual([{ prop: 'timer', message: `cron must be a 5-field expression, got "${head('x')}"… (${LONG} characters)` }]);
    const zone = await deploy({ cron: '0 * * * *', timezone: 'Z'.repeat(LONG) });
    expect(zone.status).toBe(422);
    expect(zone.body.details).toEqual([
      { prop: 'timer', message: `timezone must be an IANA time zone such as "Europe/Paris", got "${head('Z')}"… (${LONG} characters)` },
    ]);
  });

  it('a long unknown prop name and a long option value', async () => {
    const res = await api.post('/v1/sources', {
      component_code: PROPS_SOURCE,
      configured_props: { token: 't', count: 1, color: 'é'.repeat(LONG), ['k'.repeat(LONG)]: 1 },
    });
    expect(res.status).toBe(422);
    expect(res.body.details).toEqual([
      { prop: `${head('k')}… (${LONG} characters)`, message: 'is not a prop of this component' },
      { prop: 'color', message: `must be one of "red", "green", "blue", got "${head('é')}"… (${LONG} characters)` },
    ]);
  });

  it("a workflow trigger's long source_id", async () => {
    const id = `dc_${'0'.repeat(LONG)}`;
    const res = await api.post('/v1/workflows', {
      name: 'x',
      trigger: { type: 'source', source_id: id, event_name: '' },
      steps: [{ name: 'a', component_code: STEP }],
    });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: `source "dc_${'0'.repeat(97)}"… (${LONG + 3} characters) not found`, code: 'not_found' });
  });

  it('a long unknown body field', async () => {
    const field = await api.post('/v1/workflows', { name: 'x', steps: [{ name: 'a', component_code: STEP }], ['f'.repeat(LONG)]: 1 });
    expect(field.status).toBe(400);
    expect(field.body.error).toBe(`invalid body: must not have the field "${head('f')}"… (${LONG} characters)`);
    // The detail's field is the name shortened as the message's is, not the whole of what the client sent.
    expect(field.body.details).toEqual([
      { in: 'body', field: `${head('f')}… (${LONG} characters)`, message: `must not have the field "${head('f')}"… (${LONG} characters)` },
    ]);
  });

  it("a long key on the path to a NUL, and a long action's name", async () => {
    const res = await api.post('/v1/sources', { component_code: PROPS_SOURCE, configured_props: { ['k'.repeat(LONG)]: 'a\u0000' } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: `body.configured_props.${'k'.repeat(78)}… (${LONG + 22} characters) holds a NUL character (\\u0000), which no field accepts`,
      code: 'invalid_request',
    });
    const action = await api.post('/v1/components', { component_code: `module.exports = { name: "${'n'.repeat(LONG)}", version: "1.0.0", type: "action" };` });
    expect(action.status).toBe(422);
    expect(action.body.error).toBe(`action "${head('n')}"… (${LONG} characters) has no run method; an action needs one`);
  });

  it('a long template prop name of a workflow step, in the message and in details', async () => {
    const res = await api.post('/v1/workflows', {
      name: 'x',
      steps: [{ name: 'a', component_code: STEP, configured_props: { ['t'.repeat(LONG)]: '{{ steps.trigger.event }}' } }],
    });
    const name = `${head('t')}… (${LONG} characters)`;
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      error: `steps[0] ("a"): invalid configured_props: ${name} is not a prop of this component`,
      code: 'props_invalid',
      details: [{ prop: name, message: 'is not a prop of this component' }],
    });
  });
});
