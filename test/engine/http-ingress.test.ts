// HTTP endpoints of sources: the event shape, customResponse semantics, and the endpoint's error answers.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';
import { client, request } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';
import { ConfigError, trustProxySetting } from '../../src/config-parsers.js';

const RESPONDER = `
module.exports = {
  name: "Responder",
  version: "0.0.1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    const q = event.query;
    if (q.mode === "none") return;
    if (q.mode === "slow") { await new Promise((r) => setTimeout(r, 60000)); return; }
    if (q.mode === "throw") throw new Error("broken before responding");
    if (q.mode === "bad") { this.http.respond({ status: 700, body: "nope" }); return; }
    if (q.mode === "string") { this.http.respond({ status: "200.0", body: "nope" }); return; }
    if (q.mode === "digits") { this.http.respond({ status: "202", headers: { "content-type": "text/plain" }, body: "accepted" }); return; }
    if (q.mode === "framing") {
      const headers = { "transfer-encoding": "chunked", "Content-Length": "3", connection: "upgrade", upgrade: "websocket", "keep-alive": "timeout=1", te: "trailers", trailer: "x-t", "x-kept": "yes" };
      this.http.respond({ status: 200, headers, body: "0123456789" });
      return;
    }
    if (q.mode === "interim") { this.http.respond({ status: Number(q.status), headers: { link: "</a.css>; rel=preload" }, body: "hello" }); return; }
    if (q.mode === "cookies") { this.http.respond({ status: 200, headers: { "set-cookie": ["a=1; Expires=Wed, 21 Oct 2026 07:28:00 GMT", "b=2", "c=3; Path=/; Domain=127.0.0.1; HttpOnly", "d=4;path=/e/other;secure"], vary: ["origin", "accept"] } }); return; }
    if (q.mode === "buffer") { this.http.respond({ status: 202, headers: { "content-type": "application/octet-stream" }, body: Buffer.from([1, 2, 3]) }); return; }
    this.http.respond({ status: 201, headers: { "x-source": "yes" }, body: { got: event.body, endpoint: this.http.endpoint } });
    this.http.respond({ status: 500, body: "second call is ignored" });
    this.$emit({ after: "respond" });
  },
};
`;

const PLAIN_RESPONDER = `
module.exports = {
  name: "Plain",
  version: "0.0.1",
  props: { http: "$.interface.http" },
  async run(event) {
    this.http.respond({ status: 418, body: "ignored" });
    this.$emit(event);
  },
};
`;

describe.each(DIALECTS)('HTTP endpoints on %s', (dialect) => {
  let server: TestServer;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    server = await startTestServer(dialect, { runTimeout: 3 });
    api = client(server.url, (await server.createUser()).apiKey);
  });
  afterAll(() => server?.destroy());

  async function deployHttp(body: object): Promise<{ id: string; url: string }> {
    const res = await api.post('/v1/sources', body);
    expect(res.status).toBe(200);
    return { id: res.body.data.id, url: res.body.data.configured_props.http.endpoint_url };
  }

  async function eventsOf(id: string, n: number, stream = '') {
    const res = await waitFor(
      () => api.get(`/v1/sources/${id}${stream}/event_summaries?expand=event&limit=100`),
      (r) => r.body.data?.length >= n,
      { what: `${n} events on ${id}${stream}` },
    );
    return res.body.data;
  }

  it('queues any method and sub-path, answers {"success":true}, and passes the request as the event', async () => {
    const { id, url } = await deployHttp({ key: 'http-new-requests' });
    expect(url).toMatch(/\/e\/en[0-9a-f]{40}$/);
    const res = await request('POST', `${url}/hooks/github?x=1&y=two`, {
      raw: { body: '{"a":1}', contentType: 'application/json' },
      headers: { 'x-custom': 'v' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    const put = await request('PUT', url, { raw: { body: 'a=1&b=2', contentType: 'application/x-www-form-urlencoded' } });
    expect(put.status).toBe(200);
    const get = await request('GET', `${url}/`);
    expect(get.status).toBe(200);
    // A sub-path keeps its trailing slash: some senders' routes tell /hooks from /hooks/.
    expect((await request('DELETE', `${url}/deep/path/?z=1`)).status).toBe(200);
    const [slashed, last, second, first] = await eventsOf(id, 4);
    expect(slashed.event).toMatchObject({ method: 'DELETE', path: '/deep/path/', query: { z: '1' } });
    expect(first.event).toMatchObject({ method: 'POST', path: '/hooks/github', query: { x: '1', y: 'two' }, bodyRaw: '{"a":1}', body: { a: 1 } });
    // As the reference service's events have them: where the request came from, and the URL it was sent to.
    expect(first.event.client_ip).toBe('127.0.0.1');
    expect(first.event.url).toBe(`${url}/hooks/github?x=1&y=two`);
    expect(first.event.headers['x-custom']).toBe('v');
    expect(first.metadata.summary).toBe('POST /hooks/github');
    expect(second.event).toMatchObject({ method: 'PUT', path: '/', body: { a: '1', b: '2' }, bodyRaw: 'a=1&b=2' });
    expect(last.event).toMatchObject({ method: 'GET', path: '/', body: '', bodyRaw: '' });
  });

  it('keeps a text body as a string and answers CORS preflight', async () => {
    const { id, url } = await deployHttp({ key: 'http-new-requests' });
    expect((await request('POST', url, { raw: { body: 'plain words', contentType: 'text/plain' } })).status).toBe(200);
    const [event] = await eventsOf(id, 1);
    expect(event.event.body).toBe('plain words');
    const preflight = await request('OPTIONS', url, {
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    expect(preflight.headers.get('access-control-allow-headers')).toBe('content-type');
  });

  it('answers 404 for unknown and inactive endpoints, and 413 over 512 KiB', async () => {
    const unknown = await request('POST', `${server.url}/e/en${'0'.repeat(40)}`, { body: {} });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: 'no active source or workflow at this endpoint', code: 'not_found' });
    const { id, url } = await deployHttp({ key: 'http-new-requests' });
    const tooBig = await request('POST', url, { raw: { body: 'x'.repeat(512 * 1024 + 1), contentType: 'text/plain' } });
    expect([tooBig.status, tooBig.body]).toEqual([
      413,
      { error: 'the request body is over 524288 bytes, the most an endpoint takes', code: 'payload_too_large' },
    ]);
    expect((await request('POST', url, { raw: { body: 'x'.repeat(512 * 1024), contentType: 'text/plain' } })).status).toBe(200);
    await api.patch(`/v1/sources/${id}`, { active: false });
    expect((await request('POST', url, { body: {} })).status).toBe(404);
    await api.patch(`/v1/sources/${id}`, { active: true });
    expect((await request('POST', url, { body: {} })).status).toBe(200);
  });

  it('answers with the first respond() of a customResponse source; a second call is ignored with a warning', async () => {
    const { id, url } = await deployHttp({ component_code: RESPONDER });
    const res = await request('POST', url, { body: { hello: 'world' } });
    expect(res.status).toBe(201);
    expect(res.headers.get('x-source')).toBe('yes');
    expect(res.body).toEqual({ got: { hello: 'world' }, endpoint: url });
    const [emitted] = await eventsOf(id, 1);
    expect(emitted.event).toEqual({ after: 'respond' });
    const logs = await eventsOf(id, 1, '/$logs');
    expect(logs[0].event.k).toBe('warn');
    expect(logs[0].event.msg).toContain('respond');
  });

  it('leaves the headers that frame the answer or concern the connection to the server', async () => {
    const { url } = await deployHttp({ component_code: RESPONDER });
    const { pathname, port } = new URL(url);
    const socket = net.connect(Number(port), '127.0.0.1');
    socket.write(`GET ${pathname}?mode=framing HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    const chunks: Buffer[] = [];
    for await (const chunk of socket) chunks.push(chunk as Buffer);
    const [head, body] = Buffer.concat(chunks).toString('latin1').split('\r\n\r\n') as [string, string];
    const names = head
      .split('\r\n')
      .slice(1)
      .map((line) => line.slice(0, line.indexOf(':')).toLowerCase());
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
    expect(names.filter((name) => ['transfer-encoding', 'keep-alive', 'te', 'trailer', 'upgrade'].includes(name))).toEqual([]);
    expect(head).toContain('\r\ncontent-length: 10\r\n');
    expect(head).toContain('\r\nx-kept: yes\r\n');
    expect(head).toMatch(/\r\nConnection: close(\r\n|$)/);
    expect(body).toBe('0123456789');
  });

  it('ends the connection after a 1xx status, which HTTP takes as interim, instead of leaving the client waiting for a final one', async () => {
    const { url } = await deployHttp({ component_code: RESPONDER });
    const { pathname, port } = new URL(url);
    for (const [status, reason] of [
      [100, 'Continue'],
      [103, 'Early Hints'],
      [199, 'unknown'],
    ] as const) {
      // A keep-alive request: the connection ends only because the server closes it.
      const socket = net.connect(Number(port), '127.0.0.1');
      socket.write(`GET ${pathname}?mode=interim&status=${status} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      const chunks: Buffer[] = [];
      for await (const chunk of socket) chunks.push(chunk as Buffer);
      const head = Buffer.concat(chunks).toString('latin1');
      expect(head.split('\r\n')[0]).toBe(`HTTP/1.1 ${status} ${reason}`);
      expect(head).toContain('\r\nlink: </a.css>; rel=preload\r\n');
      expect(head).toMatch(/\r\nconnection: close\r\n/i);
    }
  });

  it('sends a header given as a list as one line per value, so that each cookie stays whole, each for its endpoint only', async () => {
    const { url } = await deployHttp({ component_code: RESPONDER });
    const res = await fetch(`${url}?mode=cookies`, { method: 'POST' });
    expect(res.status).toBe(200);
    // The origin is shared with the console and other accounts' endpoints: a cookie reaches only this endpoint's paths.
    const path = new URL(url).pathname;
    expect(res.headers.getSetCookie()).toEqual([
      `a=1; Expires=Wed, 21 Oct 2026 07:28:00 GMT; Path=${path}`,
      `b=2; Path=${path}`,
      `c=3; HttpOnly; Path=${path}`,
      `d=4;secure; Path=${path}`,
    ]);
    expect(res.headers.get('vary')).toBe('origin, accept');
  });

  it('accepts a buffer body', async () => {
    const { url } = await deployHttp({ component_code: RESPONDER });
    const res = await fetch(`${url}?mode=buffer`, { method: 'POST' });
    expect(res.status).toBe(202);
    expect(res.headers.get('content-type')).toBe('application/octet-stream');
    expect([...new Uint8Array(await res.arrayBuffer())]).toEqual([1, 2, 3]);
  });

  it('answers 500 for an invalid status (recorded on $errors) and for a run that throws first', async () => {
    const { id, url } = await deployHttp({ component_code: RESPONDER });
    const bad = await request('POST', `${url}?mode=bad`, { body: {} });
    expect(bad.status).toBe(500);
    const [error] = await eventsOf(id, 1, '/$errors');
    expect(error.event.error.message).toMatch(/status/);
    // The specification's status is an integer: a string other than three digits is refused the same way.
    const text = await request('POST', `${url}?mode=string`, { body: {} });
    expect(text.status).toBe(500);
    const [stringError] = await eventsOf(id, 2, '/$errors');
    expect(stringError.event.error.message).toBe('respond() needs a status that is an integer from 100 to 599, not "200.0"');
    const thrown = await request('POST', `${url}?mode=throw`, { body: {} });
    expect(thrown.status).toBe(500);
    expect(thrown.body.error).toContain('broken before responding');
  });

  it("answers a status written as three digits in a string, as the registry's HTTP sources pass it from a string prop", async () => {
    const { url } = await deployHttp({ component_code: RESPONDER });
    const res = await fetch(`${url}?mode=digits`, { method: 'POST' });
    expect([res.status, await res.text()]).toEqual([202, 'accepted']);
  });

  it('answers 504 when the run ends or times out without responding', async () => {
    const { url } = await deployHttp({ component_code: RESPONDER });
    const none = await request('POST', `${url}?mode=none`, { body: {} });
    expect(none.status).toBe(504);
    expect(none.body.code).toBe('no_response');
    const slow = await request('POST', `${url}?mode=slow`, { body: {} });
    expect(slow.status).toBe(504);
  });

  it('ignores respond() on an endpoint without customResponse, with a warning on $logs', async () => {
    const { id, url } = await deployHttp({ component_code: PLAIN_RESPONDER });
    const res = await request('POST', url, { body: { x: 1 } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    const [event] = await eventsOf(id, 1);
    expect(event.event.body).toEqual({ x: 1 });
    const logs = await eventsOf(id, 1, '/$logs');
    expect(logs[0].event.k).toBe('warn');
  });
});

describe('HTTP events behind a proxy', () => {
  it('reads --trust-proxy as false, true, or addresses and CIDR ranges, and refuses anything else', () => {
    expect(['', 'false', 'off', 'true', ' 127.0.0.1 , 10.0.0.0/8', '::1,fd00::/8', 'loopback,uniquelocal'].map(trustProxySetting)).toEqual([
      false,
      false,
      false,
      true,
      '127.0.0.1,10.0.0.0/8',
      '::1,fd00::/8',
      'loopback,uniquelocal',
    ]);
    for (const bad of ['2', 'proxy.internal', '10.0.0.0/33', '10.0.0.1/8/1', '::1/129']) expect(() => trustProxySetting(bad), bad).toThrow(ConfigError);
  });

  it('take client_ip from X-Forwarded-For only when --trust-proxy names the proxy it came through', async () => {
    const code = 'export default { name: "Ip", version: "0.1.0", props: { http: "$.interface.http" }, async run(e) { this.$emit({ ip: e.client_ip }); } };';
    for (const [trustProxy, expected] of [
      [false, '127.0.0.1'],
      ['127.0.0.1', '203.0.113.7'],
      ['10.0.0.0/8', '127.0.0.1'],
    ] as const) {
      const server = await startTestServer('sqlite', { trustProxy });
      try {
        const api = client(server.url, (await server.createUser()).apiKey);
        const source = (await api.post('/v1/sources', { component_code: code })).body.data;
        const sent = await request('POST', source.configured_props.http.endpoint_url, { headers: { 'x-forwarded-for': '203.0.113.7' } });
        expect(sent.status).toBe(200);
        const events = await waitFor(
          () => api.get(`/v1/sources/${source.id}/event_summaries?expand=event`),
          (r) => r.body.data.length === 1,
          { what: 'the request as an event' },
        );
        expect(events.body.data[0].event, String(trustProxy)).toEqual({ ip: expected });
      } finally {
        await server.destroy();
      }
    }
  });
});
