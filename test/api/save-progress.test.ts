// Saves that tell their npm installs as they happen (POST /v1/components/stream, POST /v1/workflows/stream,
// PUT /v1/workflows/{id}/stream): the events of a first install and of a cached save, the last event carrying what the
// plain route answers (success or error), and refusals before the stream starts in plain JSON. npm's registry is real.
import type { Static } from 'typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { progressEventSchema } from '../../src/api/progress-stream.js';
import { client, request } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';

/** A `progress` event's data, as the route's schema declares it. */
type Progress = Static<typeof progressEventSchema>;

interface Streamed {
  status: number;
  contentType: string;
  text: string;
  progress: Progress[];
  result: { status: number; body: any; retry_after?: number };
}

/** The frames of a finished stream: comments, then `event:` + `data:` pairs; exactly one result, the last frame. */
function parseFrames(text: string): { comments: string[]; events: Array<{ event: string; data: any }> } {
  const comments: string[] = [];
  const events: Array<{ event: string; data: any }> = [];
  for (const frame of text.split('\n\n').filter(Boolean)) {
    if (frame.startsWith(':')) {
      comments.push(frame.slice(1));
      continue;
    }
    const lines = frame.split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^event: (progress|result)$/);
    expect(lines[1]).toMatch(/^data: /);
    events.push({ event: lines[0]!.slice('event: '.length), data: JSON.parse(lines[1]!.slice('data: '.length)) });
  }
  return { comments, events };
}

/** Without the times, which only have to grow: what is left must match exactly. */
const timeless = (events: Progress[]) => events.map(({ elapsed_ms: _, ...rest }) => rest);

const IMPORTS = 'import isOdd from "is-odd@3.0.1";\nconst isNumber = require("is-number");\n';
const sourceCode = (name: string) =>
  `${IMPORTS}export default { name: "${name}", version: "0.1.0", props: { http: "$.interface.http" }, async run(e) { this.$emit({ odd: isOdd(e.body.n), number: isNumber(e.body.n) }); } };\n`;

describe.each(DIALECTS)('saves that tell their npm installs, on %s', (dialect) => {
  let server: TestServer;
  let key: string;
  let api: ReturnType<typeof client>;
  let isNumberVersion: string;

  beforeAll(async () => {
    server = await startTestServer(dialect);
    key = (await server.createUser()).apiKey;
    api = client(server.url, key);
  });
  afterAll(() => server?.destroy());

  async function stream(method: string, path: string, body: unknown): Promise<Streamed> {
    const res = await request(method, `${server.url}${path}`, { key, body });
    expect(res.status, res.text).toBe(200);
    const contentType = res.headers.get('content-type') ?? '';
    expect(contentType).toBe('text/event-stream; charset=utf-8');
    // The live streams' handshake opens it, so that a client and any proxy see the answer begin at once.
    expect(res.text.startsWith(':sse-handshake\n\n')).toBe(true);
    const { events } = parseFrames(res.text);
    expect(events.at(-1)?.event).toBe('result');
    expect(events.filter((e) => e.event === 'result')).toHaveLength(1);
    const progress = events.slice(0, -1).map((e) => e.data as Progress);
    // Times are taken as each step happens: they never go back.
    for (const [i, p] of progress.entries()) {
      expect(Number.isInteger(p.elapsed_ms) && p.elapsed_ms >= 0).toBe(true);
      if (i > 0) expect(p.elapsed_ms).toBeGreaterThanOrEqual(progress[i - 1]!.elapsed_ms);
    }
    return { status: res.status, contentType, text: res.text, progress, result: events.at(-1)!.data };
  }

  it('tells a first install step by step, package after package, then answers what POST /v1/components answers', async () => {
    const saved = await stream('POST', '/v1/components/stream', { component_code: sourceCode('first') });
    expect(saved.result.status).toBe(200);
    const component = saved.result.body.data;
    expect(saved.result).toEqual({ status: 200, body: (await api.get(`/v1/components/${component.id}`)).body });
    expect(component).toMatchObject({ name: 'first', version: '0.1.0', code: sourceCode('first') });

    // One package after the other, in the order the code imports them (import statements, then require calls).
    isNumberVersion = saved.progress.find((p) => p.package === 'is-number' && p.step === 'installing')!.version;
    expect(isNumberVersion).toMatch(/^\d+\.\d+\.\d+$/);
    expect(timeless(saved.progress)).toEqual([
      { step: 'installing', package: 'is-odd', version: '3.0.1', index: 1, total: 2 },
      { step: 'installed', package: 'is-odd', version: '3.0.1', index: 1, total: 2 },
      { step: 'resolving', package: 'is-number', version: 'latest', index: 2, total: 2 },
      { step: 'installing', package: 'is-number', version: isNumberVersion, index: 2, total: 2 },
      { step: 'installed', package: 'is-number', version: isNumberVersion, index: 2, total: 2 },
    ]);

    // The source runs with what was installed.
    const source = await api.post('/v1/sources', { component_id: component.id });
    expect(source.status, source.text).toBe(200);
  });

  it('says cached for packages already installed, and trims the result with include as the plain route does', async () => {
    const cached = [
      { step: 'cached', package: 'is-odd', version: '3.0.1', index: 1, total: 2 },
      { step: 'cached', package: 'is-number', version: isNumberVersion, index: 2, total: 2 },
    ];
    // Other code with the same imports: each package is found in the cache.
    const second = await stream('POST', '/v1/components/stream', { component_code: sourceCode('second') });
    expect(second.result.status).toBe(200);
    expect(timeless(second.progress)).toEqual(cached);
    // The same code again was prepared already: its packages are said cached all the same.
    const again = await stream('POST', '/v1/components/stream', { component_code: sourceCode('second'), include: 'id, name' });
    expect(timeless(again.progress)).toEqual(cached);
    const plain = await api.post('/v1/components', { component_code: sourceCode('second'), include: 'id, name' });
    expect(Object.keys(again.result.body.data)).toEqual(['id', 'name']);
    expect(again.result).toEqual({ status: 200, body: { data: { id: again.result.body.data.id, name: plain.body.data.name } } });
    expect(Object.keys(plain.body.data)).toEqual(['id', 'name']);

    // No npm imports: no progress, only the result.
    const bare = await stream('POST', '/v1/components/stream', { component_code: 'export default { name: "bare", version: "1", async run() {} };' });
    expect(bare.progress).toEqual([]);
    expect(bare.result.body.data.name).toBe('bare');
  });

  it('ends with the error POST /v1/components answers when the save fails, after the steps it took', async () => {
    for (const component_code of ['export default { name: "broken", run( {', '   ']) {
      const plain = await api.post('/v1/components', { component_code });
      expect(plain.status).toBeGreaterThanOrEqual(400);
      const streamed = await stream('POST', '/v1/components/stream', { component_code });
      expect(streamed.progress).toEqual([]);
      expect(streamed.result).toEqual({ status: plain.status, body: plain.body });
    }

    const missing = 'tributary-no-such-package-a1b2c3';
    const failed = await stream('POST', '/v1/components/stream', {
      component_code: `import x from "${missing}";\nimport isOdd from "is-odd@3.0.1";\nexport default { name: "x", version: "1" };`,
    });
    // npm knows no such package: its resolving has no sequel, and the bundle still looks at the next import.
    expect(timeless(failed.progress)).toEqual([
      { step: 'resolving', package: missing, version: 'latest', index: 1, total: 2 },
      { step: 'cached', package: 'is-odd', version: '3.0.1', index: 2, total: 2 },
    ]);
    expect(failed.result.status).toBe(422);
    expect(failed.result.body).toEqual({
      error: expect.stringContaining(`could not install npm package "${missing}"`),
      code: 'component_invalid',
      details: [{ reason: 'package_install_failed', import: missing }],
    });
  });

  it('refuses a bad body or a missing key before the stream starts, in JSON, as the plain route does', async () => {
    const bad = await api.post('/v1/components/stream', { component_code: 42 });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toMatch(/^application\/json/);
    expect(bad.body).toEqual((await api.post('/v1/components', { component_code: 42 })).body);
    expect(bad.body.code).toBe('invalid_request');

    const unknownField = await api.post('/v1/workflows/stream', { name: 'x', steps: [{ name: 'a', component_code: 'x', color: 'red' }] });
    expect([unknownField.status, unknownField.body.code]).toEqual([400, 'invalid_request']);

    const anonymous = await request('POST', `${server.url}/v1/components/stream`, { body: { component_code: 'x' } });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    expect(anonymous.body).toEqual({ error: expect.any(String), code: 'unauthorized' });
  });

  it("tells a workflow's step installs, naming each step, on create and on change", async () => {
    const step = (imports: string, body: string) => `${imports}export default defineComponent({ async run({ steps }) { return ${body}; } });\n`;
    const body = {
      name: 'progress workflow',
      steps: [
        { name: 'odd', component_code: step('import isOdd from "is-odd@3.0.1";\n', 'isOdd(steps.trigger.event.n)') },
        { name: 'even', component_code: step('import isEven from "is-even@1.0.0";\n', 'isEven(steps.trigger.event.n)') },
      ],
    };
    const created = await stream('POST', '/v1/workflows/stream', body);
    expect(created.result.status).toBe(200);
    const workflow = created.result.body.data;
    expect(created.result).toEqual({ status: 200, body: (await api.get(`/v1/workflows/${workflow.id}`)).body });
    // Steps are saved one after the other, so their reports are in step order.
    expect(timeless(created.progress)).toEqual([
      { step: 'cached', package: 'is-odd', version: '3.0.1', index: 1, total: 1, workflow_step: 'odd' },
      { step: 'installing', package: 'is-even', version: '1.0.0', index: 1, total: 1, workflow_step: 'even' },
      { step: 'installed', package: 'is-even', version: '1.0.0', index: 1, total: 1, workflow_step: 'even' },
    ]);

    const changed = await stream('PUT', `/v1/workflows/${workflow.id}/stream`, { steps: body.steps.slice(1) });
    expect(timeless(changed.progress)).toEqual([{ step: 'cached', package: 'is-even', version: '1.0.0', index: 1, total: 1, workflow_step: 'even' }]);
    expect(changed.result).toEqual({ status: 200, body: (await api.get(`/v1/workflows/${workflow.id}`)).body });
    expect(changed.result.body.data.steps.map((s: { name: string }) => s.name)).toEqual(['even']);

    const ghost = 'p_00000000000000000000000000';
    const plain = await api.put(`/v1/workflows/${ghost}`, { active: false });
    // An id that is not the account's is refused before the stream opens, in JSON, as the plain route refuses it.
    const streamed = await request('PUT', `${server.url}/v1/workflows/${ghost}/stream`, { key, body: { active: false } });
    expect([streamed.status, streamed.body]).toEqual([404, plain.body]);
    expect(plain.body).toEqual({ error: `workflow "${ghost}" not found`, code: 'not_found' });
  });

  it('documents the routes in the OpenAPI document as extensions answering an event stream', async () => {
    const doc = (await request('GET', `${server.url}/v1/openapi.json`)).body;
    for (const [path, method] of [
      ['/v1/components/stream', 'post'],
      ['/v1/workflows/stream', 'post'],
      ['/v1/workflows/{id}/stream', 'put'],
    ] as const) {
      const operation = doc.paths[path][method];
      expect(operation.tags).toContain('extensions');
      const media = operation.responses['200'].content['text/event-stream'];
      expect(Object.keys(media['x-events'])).toEqual(['progress', 'result']);
      expect(media['x-events'].progress.required).toEqual(['step', 'package', 'version', 'index', 'total', 'elapsed_ms']);
    }
  });
});
