// A client that stops sending in the middle of its request is answered 408 and disconnected, instead of holding its
// connection open for ever; a live stream, whose request ended with its headers, is not cut by that limit.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { emitterSource } from '../helpers/components.js';
import { client } from '../helpers/client.js';

/** Sends `head` on a raw connection and returns all the server sent until it closed the connection. */
async function sendAndReadToClose(url: string, head: string): Promise<string> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  let received = '';
  socket.on('data', (chunk) => {
    received += chunk.toString();
  });
  socket.write(head);
  await new Promise<void>((resolve) => socket.on('close', () => resolve()));
  return received;
}

describe('stalled requests', () => {
  let server: TestServer;
  let key: string;

  beforeAll(async () => {
    server = await startTestServer('sqlite', {}, { requestTimeoutMs: 1000 });
    key = (await server.createUser()).apiKey;
  });
  afterAll(() => server?.destroy());

  it('answers 408 with a JSON body to a body that stops short of its Content-Length, and closes', async () => {
    const { host } = new URL(server.url);
    const answer = await sendAndReadToClose(
      server.url,
      `POST /v1/sources HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":1}`,
    );
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({ error: 'the request did not arrive in time', code: 'request_timeout' });
    expect((await client(server.url, key).get('/v1/users/me/sources')).body.data).toEqual([]);
  });

  it('keeps a live stream open past the limit', async () => {
    const api = client(server.url, key);
    const source = (await api.post('/v1/sources', { component_code: emitterSource() })).body.data.id;
    server.running.services.sse.configure({ heartbeatMs: 700 });
    const abort = new AbortController();
    const res = await fetch(`${server.url}/v1/sources/${source}/sse`, { headers: { authorization: `Bearer ${key}` }, signal: abort.signal });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let text = '';
    // The connect handshake and three heartbeats: over two seconds, twice the request limit.
    while ((text.match(/:sse-handshake\n\n/g) ?? []).length < 4) {
      const { value, done } = await reader.read();
      expect(done).toBe(false);
      text += new TextDecoder().decode(value);
    }
    abort.abort();
  });
});
