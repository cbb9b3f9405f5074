// A JSON body that does not parse is a 400 saying where it breaks, without V8's quote of the text around the token:
// that text is what the client mistyped, a connected account's credential left unquoted say, and the 400's message
// is logged too, where credentials never are.
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../helpers/client.js';
import { DIALECTS, startTestServer, type TestServer } from '../helpers/server.js';

describe.each(DIALECTS)('a JSON body with an unexpected token on %s', (dialect) => {
  let server: TestServer;
  let api: ReturnType<typeof client>;
  let logged = '';

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _encoding, next) {
        logged += chunk.toString();
        next();
      },
    });
    server = await startTestServer(dialect, {}, { logger: pino({ level: 'info' }, sink) });
    api = client(server.url, (await server.createUser()).apiKey);
  });
  afterAll(async () => {
    await server?.destroy();
  });

  const send = (path: string, method: 'POST' | 'PUT', text: string) =>
    method === 'POST'
      ? api.post(path, undefined, { raw: { body: text, contentType: 'application/json' } })
      : api.put(path, undefined, { raw: { body: text, contentType: 'application/json' } });

  it('says the position of the token, and neither the token nor the text around it, in the answer or the log', async () => {
    const cases: Array<[string, 'POST' | 'PUT', string, string]> = [
      // 10 characters either side of the token: found once in the body, they give its position.
      ['/v1/accounts', 'POST', '{"app":"mastodon","name":"n","credentials":{"access_token":sk_live_ABCDEFGHIJKLMNOP}}', 'in JSON at position 59'],
      // Near the end, the excerpt runs to the end of the body; "t" may start true, so the "o" after it is the token.
      ['/v1/accounts', 'POST', '{"credentials":{"token":tok_123}}', 'in JSON at position 25'],
      // A body of 21 characters or fewer is quoted whole, which says no position.
      ['/v1/data_stores/s/records?key=k', 'PUT', '{"value":secret-abc}', ''],
    ];
    for (const [path, method, text, where] of cases) {
      const res = await send(path, method, text);
      const error = `the body sent as application/json is not JSON: Unexpected token${where ? ` ${where}` : ''}`;
      expect([res.status, res.body], text).toEqual([400, { error, code: 'invalid_request' }]);
    }
    for (const secret of ['sk_live_', 'tok_123', 'secret-abc', 'ABCDEFG']) expect(logged).not.toContain(secret);
    expect(logged).toContain('Unexpected token in JSON at position 59');
  });

  it("keeps V8's other messages, which say a position and quote nothing", async () => {
    const res = await send('/v1/accounts', 'POST', '{"app":"x",}');
    expect([res.status, res.body]).toEqual([
      400,
      { error: 'the body sent as application/json is not JSON: Expected double-quoted property name in JSON at position 11', code: 'invalid_request' },
    ]);
  });
});
