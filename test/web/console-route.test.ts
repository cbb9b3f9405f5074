// The console's route without a browser: the page and its assets, their types and headers, and that /v1 and /docs stay as they were.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, request } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';

describe.each(DIALECTS)('web console route (%s)', (dialect) => {
  let server: TestServer;
  let key: string;

  beforeAll(async () => {
    server = await startTestServer(dialect);
    key = (await server.createUser()).apiKey;
  });
  afterAll(async () => server?.destroy());

  const assetsOf = (html: string) => [...html.matchAll(/(?:src|href)="\/console\/([^"]+)"/g)].map((m) => m[1]!);

  it('serves the page at / with a strict Content-Security-Policy and no inline script', async () => {
    const res = await request('GET', `${server.url}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('set-cookie')).toBeNull();
    // Every <script> has a src (nothing inline for the CSP to refuse) and an integrity hash.
    const scripts = [...res.text.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBe(1);
    for (const [, attributes, body] of scripts) {
      expect(attributes).toMatch(/src="\/console\/app-[A-Z0-9]+\.js"/);
      expect(attributes).toMatch(/integrity="sha384-/);
      expect(body!.trim()).toBe('');
    }
    const assets = assetsOf(res.text);
    expect(assets).toHaveLength(2);
    expect(assets.filter((name) => /^app-\w+\.css$/.test(name))).toHaveLength(1);
    expect(assets.filter((name) => /^app-\w+\.js$/.test(name))).toHaveLength(1);
  });

  it('serves the script and stylesheet the page names, with their types, immutable caching and matching integrity', async () => {
    const page = await request('GET', `${server.url}/`);
    for (const name of assetsOf(page.text)) {
      const res = await fetch(`${server.url}/console/${name}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(name.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8');
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      const body = Buffer.from(await res.arrayBuffer());
      const { createHash } = await import('node:crypto');
      const integrity = `sha384-${createHash('sha384').update(body).digest('base64')}`;
      expect(page.text).toContain(`/console/${name}" integrity="${integrity}"`);
      // Offline: the bundle names no other origin to load code from.
      if (name.endsWith('.js')) expect(body.toString()).not.toMatch(/https?:\/\/(?:cdn|unpkg|esm\.sh)/);
    }
  });

  it("tells the console the server's shortest timer interval, so that the form checks what a deploy would refuse", async () => {
    expect((await request('GET', `${server.url}/`)).text).toContain('<meta name="tributary-min-timer-interval" content="15">');
    const strict = await startTestServer(dialect, { minTimerInterval: 30 });
    try {
      expect((await request('GET', `${strict.url}/`)).text).toContain('<meta name="tributary-min-timer-interval" content="30">');
    } finally {
      await strict.destroy();
    }
  });

  it('answers 404 with a JSON error for an unknown asset', async () => {
    for (const path of ['/console/app-NOPE.js', '/console/../package.json', '/console/', '/console/index.html']) {
      const res = await request('GET', `${server.url}${path}`);
      expect(res.status, path).toBe(404);
      expect(res.body.code, path).toBe('not_found');
    }
  });

  it('leaves /v1, /docs and /healthz as they were', async () => {
    const anonymous = await request('GET', `${server.url}/v1/users/me`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.code).toBe('unauthorized');
    expect(anonymous.headers.get('content-security-policy')).toBeNull();
    const me = await client(server.url, key).get('/v1/users/me');
    expect(me.status).toBe(200);
    expect(me.headers.get('content-type')).toContain('application/json');
    expect((await request('GET', `${server.url}/docs/`)).status).toBe(200);
    expect((await request('GET', `${server.url}/healthz`)).body.status).toBe('ok');
    const unknown = await request('GET', `${server.url}/v1/nothing-here`, { key });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('not_found');
    // The console's routes stay out of the API's OpenAPI document.
    const openapi = await request('GET', `${server.url}/v1/openapi.json`, { key });
    expect(Object.keys(openapi.body.paths)).not.toContain('/');
    expect(Object.keys(openapi.body.paths).some((p) => p.startsWith('/console'))).toBe(false);
  });
});
