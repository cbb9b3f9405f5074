// A timer a finished call left behind that changes the built-ins an account's components share: the worker says so as
// the timer fires, not at the end of the account's next call, so that call runs in a new worker and never meets the
// change. Through the real API, with the server's own log read for the moment it heard.
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, request } from '../helpers/client.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const RETIRED = "a timer left by a finished call changed built-ins the account's components share: the worker serves no further call";

/** Adds `leftover` to Object.prototype 50 ms after its run has ended. */
const POLLUTER = `module.exports = { name: "polluter", version: "1.0.0", props: { http: "$.interface.http" },
  async run() { setTimeout(() => { Object.prototype.leftover = "from a timer"; }, 50); this.$emit({ pid: process.pid }); } };`;

/** Reports its worker and whether its objects inherit `leftover`. */
const BYSTANDER = `module.exports = { name: "bystander", version: "1.0.0", props: { http: "$.interface.http" },
  async run() { this.$emit({ pid: process.pid, leftover: ({}).leftover ?? null }); } };`;

describe('a leftover timer that changes shared built-ins', () => {
  let server: TestServer;
  const lines: Array<{ msg: string; level: number; accountId?: string; pid?: number }> = [];

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _encoding, next) {
        for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
        next();
      },
    });
    server = await startTestServer('sqlite', {}, { logger: pino({ level: 'info' }, sink) });
  });
  afterAll(() => server?.destroy());

  it("retires the idle worker as the timer fires, so the account's next call never meets the change", async () => {
    const user = await server.createUser();
    const api = client(server.url, user.apiKey);
    const deploy = async (code: string) => {
      const created = await api.post('/v1/sources', { component_code: code });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      return { id: created.body.data.id as string, endpoint: created.body.data.configured_props.http.endpoint_url as string };
    };
    const runOnce = async (source: { id: string; endpoint: string }) => {
      expect((await request('POST', source.endpoint, { body: {} })).status).toBe(200);
      const events = await waitFor(
        () => api.get(`/v1/sources/${source.id}/event_summaries?expand=event`),
        (res) => res.body.data.length > 0,
        { what: 'the run to emit' },
      );
      return events.body.data[0].event;
    };
    const polluter = await deploy(POLLUTER);
    const bystander = await deploy(BYSTANDER);
    const { pid } = await runOnce(polluter);
    const said = await waitFor(
      async () => lines.find((line) => line.msg === RETIRED),
      (line) => line !== undefined,
      { what: 'the server to hear of the change' },
    );
    expect(said).toMatchObject({ level: 30, accountId: user.id, pid });
    const next = await runOnce(bystander);
    expect(next).toEqual({ pid: expect.any(Number), leftover: null });
    expect(next.pid).not.toBe(pid);
  });
});
