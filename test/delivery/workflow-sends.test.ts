// Workflow steps' `$.send.http`, `$.send.email` and `$.send.s3`: carried out once after their step commits, against a
// real HTTP receiver, a real SMTP server (smtp-server) and a real S3-protocol server (s3rver); retried on the webhook
// schedule, refused through the outbound guard, failed for good when retrying cannot help, and never made for a
// failed step or on a server without the settings they need.
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SMTPServer } from 'smtp-server';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { DIALECTS, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { client } from '../helpers/client.js';
import { waitFor } from '../helpers/wait.js';
import { startReceiver, withPausedNode, type Receiver } from './helpers.js';
import { sendsOfRuns, type SendRow } from '../../src/store/sends.js';
import { ConfigError, SETTINGS, resolveConfig } from '../../src/config.js';

/** s3rver ships no types: the part of it these tests use. */
interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
type S3rverClass = new (options: {
  address: string;
  port: number;
  silent: boolean;
  directory: string;
  configureBuckets: Array<{ name: string }>;
}) => S3rverInstance;
const S3rver = createRequire(import.meta.url)('s3rver') as S3rverClass;

const BUCKET = 'tributary-sends';
/** s3rver's only credentials. */
const S3_KEY = 'S3RVER';
const SMTP_USER = 'tributary';
const SMTP_PASSWORD = 'smtp-s3cret';
const EMAIL_FROM = 'workflows@tributary.test';

interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
}

/** What the SMTP server answers to RCPT TO for an address: accept, or an SMTP code with a message. */
type RcptAnswer = { code: number; message: string } | 'accept';

/** A real SMTP server on 127.0.0.1 that needs the login above and records every message it accepts. */
async function startSmtp() {
  const messages: ReceivedMail[] = [];
  const rcptAnswers = new Map<string, (nth: number) => RcptAnswer>();
  const rcptCounts = new Map<string, number>();
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.username === SMTP_USER && auth.password === SMTP_PASSWORD) callback(null, { user: auth.username });
      else callback(new Error('Invalid username or password'));
    },
    onRcptTo(address, _session, callback) {
      const nth = (rcptCounts.get(address.address) ?? 0) + 1;
      rcptCounts.set(address.address, nth);
      const answer = rcptAnswers.get(address.address)?.(nth) ?? 'accept';
      if (answer === 'accept') return callback();
      callback(Object.assign(new Error(answer.message), { responseCode: answer.code }));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
        messages.push({ from, to: session.envelope.rcptTo.map((r) => r.address), raw: Buffer.concat(chunks).toString('utf8') });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://${SMTP_USER}:${SMTP_PASSWORD}@127.0.0.1:${port}`,
    messages,
    to: (address: string) => messages.filter((m) => m.to.includes(address)),
    answerRcpt: (address: string, answer: (nth: number) => RcptAnswer) => void rcptAnswers.set(address, answer),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A MIME message's top headers and the bodies of its parts (or its own body), enough for what nodemailer writes. */
function parseMail(raw: string): { headers: Record<string, string>; parts: Record<string, string> } {
  const [head, ...rest] = raw.split('\r\n\r\n');
  const headers: Record<string, string> = {};
  for (const line of head!.replace(/\r\n\s+/g, ' ').split('\r\n')) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const body = rest.join('\r\n\r\n');
  const boundary = /boundary="?([^";]+)"?/.exec(headers['content-type'] ?? '')?.[1];
  if (!boundary) return { headers, parts: { [headers['content-type']!.split(';')[0]!]: body.replace(/\r\n$/, '') } };
  const parts: Record<string, string> = {};
  for (const part of body.split(`--${boundary}`).slice(1, -1)) {
    const [partHead, ...partBody] = part.replace(/^\r\n/, '').split('\r\n\r\n');
    expect(partHead).toMatch(/Content-Transfer-Encoding: 7bit/);
    const type = /Content-Type: ([^;\r\n]+)/.exec(partHead!)![1]!;
    parts[type] = partBody.join('\r\n\r\n').replace(/\r\n$/, '');
  }
  return { headers, parts };
}

/** A one-step workflow whose code is `body`, run once by hand with `event`. */
async function runOnce(api: ReturnType<typeof client>, body: string, event: object): Promise<{ workflowId: string; run: any }> {
  const created = await api.post('/v1/workflows', {
    name: 'sends',
    steps: [{ name: 'send', component_code: `module.exports = { async run({ steps, $ }) { ${body} } };` }],
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const workflowId = created.body.data.id as string;
  const started = await api.post(`/v1/workflows/${workflowId}/run`, event);
  expect(started.status).toBe(202);
  const finished = await waitFor(
    () => api.get(`/v1/workflows/${workflowId}/runs/${started.body.data.id}`),
    (r) => r.body.data?.status === 'succeeded' || r.body.data?.status === 'failed',
    { what: `run ${started.body.data.id} to finish` },
  );
  return { workflowId, run: finished.body.data };
}

describe.each(DIALECTS)('workflow sends on %s', (dialect) => {
  let receiver: Receiver;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let s3rver: S3rverInstance;
  let s3Dir: string;
  let s3: S3Client;
  /** Every destination configured, private addresses allowed, one retry a second after the first attempt. */
  let configured: TestServer;
  /** No SMTP, no S3, private addresses refused: the defaults. */
  let bare: TestServer;

  beforeAll(async () => {
    receiver = await startReceiver();
    smtp = await startSmtp();
    s3Dir = tempDir('tributary-s3-');
    s3rver = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: s3Dir, configureBuckets: [{ name: BUCKET }] });
    const { port: s3Port } = await s3rver.run();
    const s3Endpoint = `http://127.0.0.1:${s3Port}`;
    s3 = new S3Client({ endpoint: s3Endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: S3_KEY, secretAccessKey: S3_KEY } });
    configured = await startTestServer(dialect, {
      allowPrivateNetwork: true,
      webhookRetrySchedule: [1],
      smtpUrl: smtp.url,
      emailFrom: EMAIL_FROM,
      s3Endpoint,
      s3AccessKeyId: S3_KEY,
      s3SecretAccessKey: S3_KEY,
    });
    bare = await startTestServer(dialect);
  });
  afterAll(async () => {
    await configured?.destroy();
    await bare?.destroy();
    s3?.destroy();
    await s3rver?.close();
    await smtp?.close();
    await receiver?.close();
    if (s3Dir) fs.rmSync(s3Dir, { recursive: true, force: true });
  });

  async function account(server: TestServer) {
    const user = await server.createUser();
    return { id: user.id, email: user.email, api: client(server.url, user.apiKey) };
  }

  /** The run's sends once none of them is pending any more. */
  function settledSends(server: TestServer, runId: string, count: number): Promise<SendRow[]> {
    return waitFor(
      () => sendsOfRuns(server.running.services.store.db, [runId]),
      (rows) => rows.length === count && rows.every((row) => row.state !== 'pending'),
      { what: `${count} settled sends of ${runId}` },
    );
  }

  const rowView = (row: SendRow) => ({ kind: row.kind, state: row.state, attempt: row.attempt, status_code: row.status_code, last_error: row.last_error });

  it('makes $.send.http once after the step commits, retrying a 500 on the schedule, with method, headers, query and body', async () => {
    const { api } = await account(configured);
    const flaky = `/http-${dialect}-flaky`;
    const plain = `/http-${dialect}-plain`;
    receiver.answerAt(`${flaky}?q=a+b&n=7`, (_request, nth) => (nth === 1 ? { status: 500 } : { status: 204 }));
    const code = `
      $.send.http({ method: "put", url: steps.trigger.event.base + "${flaky}", headers: { "X-Token": "abc", "X-Many": ["a", "b"] },
                    params: { q: "a b", n: steps.trigger.event.n }, data: { hello: "world", n: steps.trigger.event.n } });
      $.send.http({ url: steps.trigger.event.base + "${plain}?keep=1", data: "plain text", auth: { username: "ada", password: "pw" } });
      return "queued";`;
    const { run } = await runOnce(api, code, { base: receiver.url, n: 7 });
    expect(run.status).toBe('succeeded');
    const rows = await settledSends(configured, run.id, 2);
    expect(rows.map(rowView).sort((a, b) => a.attempt - b.attempt)).toEqual([
      { kind: 'http', state: 'succeeded', attempt: 1, status_code: 200, last_error: null },
      { kind: 'http', state: 'succeeded', attempt: 2, status_code: 204, last_error: null },
    ]);
    expect(rows.every((row) => row.id.startsWith('ws_') && row.step_index === 0 && row.finished_ms !== null && row.next_attempt_ms === null)).toBe(true);
    const shown = await api.get(`/v1/workflows/${run.workflow_id}/runs/${run.id}`);
    expect(shown.body.data.steps[0].sends.sort((a: { attempt: number }, b: { attempt: number }) => a.attempt - b.attempt)).toEqual([
      { kind: 'http', state: 'succeeded', attempt: 1, status_code: 200 },
      { kind: 'http', state: 'succeeded', attempt: 2, status_code: 204 },
    ]);

    const attempts = receiver.on(`${flaky}?q=a+b&n=7`);
    expect(attempts).toHaveLength(2);
    for (const request of attempts) {
      expect(request.method).toBe('PUT');
      expect(request.body).toBe('{"hello":"world","n":7}');
      expect(request.headers).toMatchObject({ 'x-token': 'abc', 'x-many': 'a, b', 'content-type': 'application/json', 'user-agent': 'Tributary-Sends/1' });
    }
    // The retry waited for the schedule's one second.
    expect(attempts[1]!.receivedAt - attempts[0]!.receivedAt).toBeGreaterThanOrEqual(1000);

    const [sent] = receiver.on(`${plain}?keep=1`);
    expect(receiver.on(`${plain}?keep=1`)).toHaveLength(1);
    expect(sent!.method).toBe('POST');
    expect(sent!.body).toBe('plain text');
    expect(sent!.headers['content-type']).toBeUndefined();
    expect(sent!.headers.authorization).toBe(`Basic ${Buffer.from('ada:pw').toString('base64')}`);
  });

  it('gives back a send cut off by a shutdown untried, and makes it after the restart', async () => {
    const path = `/http-${dialect}-restart`;
    receiver.answerAt(path, (_request, nth) => (nth === 1 ? 'hang' : { status: 200 }));
    const user = await configured.createUser();
    const { run } = await runOnce(client(configured.url, user.apiKey), `$.send.http({ method: "POST", url: "${receiver.url}${path}", data: [1] });`, {});
    await waitFor(
      async () => receiver.on(path).length,
      (n) => n === 1,
      { what: 'the first attempt to reach the receiver' },
    );
    await configured.restart();
    const [row] = await settledSends(configured, run.id, 1);
    expect(rowView(row!)).toEqual({ kind: 'http', state: 'succeeded', attempt: 1, status_code: 200, last_error: null });
    expect(receiver.on(path).map((request) => request.body)).toEqual(['[1]', '[1]']);
  });

  it('fails $.send.http to a private address at once when private addresses are not allowed', async () => {
    const { api } = await account(bare);
    const literal = `/http-${dialect}-refused`;
    const byName = `/http-${dialect}-refused-by-name`;
    const port = new URL(receiver.url).port;
    const code = `
      $.send.http({ method: "POST", url: "http://127.0.0.1:${port}${literal}", data: { secret: 1 } });
      $.send.http({ method: "POST", url: "http://localhost:${port}${byName}", data: { secret: 2 } });`;
    const { run } = await runOnce(api, code, {});
    expect(run.status).toBe('succeeded');
    const rows = await settledSends(bare, run.id, 2);
    expect(rows.map(rowView)).toEqual([
      {
        kind: 'http',
        state: 'failed',
        attempt: 1,
        status_code: null,
        last_error: 'refused: 127.0.0.1 is a private address; outbound requests may not reach it',
      },
      {
        kind: 'http',
        state: 'failed',
        attempt: 1,
        status_code: null,
        last_error: 'refused: localhost resolves to a private address; outbound requests may not reach it',
      },
    ]);
    expect(receiver.on(literal)).toEqual([]);
    expect(receiver.on(byName)).toEqual([]);
  });

  it("makes $.send.email once: one message to the account's email, with subject, text and html", async () => {
    const { api, email } = await account(configured);
    const code = `$.send.email({ subject: "Run report " + steps.trigger.event.n, text: "n is " + steps.trigger.event.n, html: "<p>n is <b>" + steps.trigger.event.n + "</b></p>" });`;
    const { run } = await runOnce(api, code, { n: 7 });
    expect(run.status).toBe('succeeded');
    const rows = await settledSends(configured, run.id, 1);
    expect(rows.map(rowView)).toEqual([{ kind: 'email', state: 'succeeded', attempt: 1, status_code: null, last_error: null }]);
    const received = smtp.to(email);
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ from: EMAIL_FROM, to: [email] });
    const { headers, parts } = parseMail(received[0]!.raw);
    expect(headers).toMatchObject({ from: EMAIL_FROM, to: email, subject: 'Run report 7' });
    expect(parts).toEqual({ 'text/plain': 'n is 7', 'text/html': '<p>n is <b>7</b></p>' });
  });

  it("sends no file of the server's in an email whose body component code rewrote after its worker's checks", async () => {
    const { api, email } = await account(configured);
    const secret = path.join(tempDir('tributary-server-file-'), 'secret.txt');
    fs.writeFileSync(secret, 'server secret');
    // JSON.stringify turns the worker's report into text, calling any `toJSON` on Object.prototype: a step that puts one
    // there edits its sends after the checks.
    // nodemailer reads `{ path }` bodies from the disk and `{ href }` ones from the network.
    const code = `Object.defineProperty(Object.prototype, "toJSON", { configurable: true, writable: true, value: function () {
        const value = this;
        if (value.t === "outcomes" && value.results.length) {
          delete Object.prototype.toJSON;
          const payload = value.results[0].outcome.step.sends[0].payload;
          payload.text = { path: ${JSON.stringify(secret)} };
          payload.html = { path: ${JSON.stringify(secret)} };
        }
        return value;
      } });
      $.send.email({ subject: "forged", text: "checked" });`;
    const { run } = await runOnce(api, code, {});
    expect(run.status).toBe('succeeded');
    const [row] = await settledSends(configured, run.id, 1);
    expect(rowView(row!)).toEqual({ kind: 'email', state: 'failed', attempt: 1, status_code: null, last_error: 'text: a string is needed' });
    expect(
      smtp
        .to(email)
        .map((m) => m.raw)
        .join(''),
    ).not.toContain('server secret');
  });

  it('retries an email the SMTP server defers (451), and fails one it rejects (550) at once', async () => {
    const deferred = await account(configured);
    const rejected = await account(configured);
    smtp.answerRcpt(deferred.email, (nth) => (nth === 1 ? { code: 451, message: 'Try again later' } : 'accept'));
    smtp.answerRcpt(rejected.email, () => ({ code: 550, message: 'No such user here' }));
    const code = `$.send.email({ subject: "Once", text: "only once" });`;
    const [first, second] = await Promise.all([runOnce(deferred.api, code, {}), runOnce(rejected.api, code, {})]);
    const [retried] = await settledSends(configured, first.run.id, 1);
    expect(rowView(retried!)).toEqual({ kind: 'email', state: 'succeeded', attempt: 2, status_code: null, last_error: null });
    expect(smtp.to(deferred.email)).toHaveLength(1);
    expect(parseMail(smtp.to(deferred.email)[0]!.raw).parts).toEqual({ 'text/plain': 'only once' });
    const [failed] = await settledSends(configured, second.run.id, 1);
    expect(rowView(failed!)).toMatchObject({ kind: 'email', state: 'failed', attempt: 1 });
    expect(failed!.last_error).toMatch(/^EENVELOPE: 550 No such user here/);
    expect(smtp.to(rejected.email)).toEqual([]);
  });

  it("makes $.send.s3 once: one object under the prefix, in the account's folder, holding the payload as JSON", async () => {
    const { api, id } = await account(configured);
    const prefix = `runs/${dialect}/`;
    const code = `$.send.s3({ bucket: "${BUCKET}", prefix: "${prefix}", payload: { n: steps.trigger.event.n, nested: { ok: true }, list: [1, "two"] } });`;
    const { run } = await runOnce(api, code, { n: 7 });
    expect(run.status).toBe('succeeded');
    const [row] = await settledSends(configured, run.id, 1);
    expect(rowView(row!)).toEqual({ kind: 's3', state: 'succeeded', attempt: 1, status_code: 200, last_error: null });
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `${id}/${prefix}` }));
    const keys = (listed.Contents ?? []).map((object) => object.Key);
    expect(keys).toEqual([`${id}/${prefix}${new Date(Number(row!.created_ms)).toISOString()}-${row!.id}.json`]);
    const object = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: keys[0]! }));
    expect(object.ContentType).toBe('application/json');
    expect(await object.Body!.transformToString()).toBe('{"n":7,"nested":{"ok":true},"list":[1,"two"]}');
  });

  it("keeps each account's $.send.s3 in its own folder: no prefix reaches another account's objects", async () => {
    const owner = await account(configured);
    const other = await account(configured);
    const prefix = `shared-${dialect}/`;
    const mine = await runOnce(owner.api, `$.send.s3({ bucket: "${BUCKET}", prefix: "${prefix}", payload: "owner" });`, {});
    // The same prefix, and one naming the owner's folder: neither lands beside the owner's objects.
    const same = await runOnce(other.api, `$.send.s3({ bucket: "${BUCKET}", prefix: "${prefix}", payload: "other" });`, {});
    const named = await runOnce(other.api, `$.send.s3({ bucket: "${BUCKET}", prefix: "${owner.id}/${prefix}", payload: "other" });`, {});
    for (const { run } of [mine, same, named]) expect((await settledSends(configured, run.id, 1))[0]!.state).toBe('succeeded');
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `${owner.id}/` }));
    const bodies = await Promise.all(
      (listed.Contents ?? []).map(async (o) => (await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: o.Key! }))).Body!.transformToString()),
    );
    expect(bodies).toEqual(['"owner"']);
    // A prefix climbing out of the folder fails the step.
    const climbing = await runOnce(other.api, `$.send.s3({ bucket: "${BUCKET}", prefix: "../${owner.id}/", payload: "other" });`, {});
    expect(climbing.run.status).toBe('failed');
    expect(JSON.stringify(climbing.run)).toContain('prefix may not hold');
  });

  it("fails a $.send.s3 whose prefix component code rewrote after its worker's checks, at once and in the account's folder only", async () => {
    const { api } = await account(configured);
    // JSON.stringify turns the worker's report into text, calling any `toJSON` on Object.prototype: a step that puts one
    // there edits its sends after the checks.
    const forged = (prefix: string) => `Object.defineProperty(Object.prototype, "toJSON", { configurable: true, writable: true, value: function () {
        const value = this;
        if (value.t === "outcomes" && value.results.length) { delete Object.prototype.toJSON; value.results[0].outcome.step.sends[0].payload.prefix = ${prefix}; }
        return value;
      } });
      $.send.s3({ bucket: "${BUCKET}", prefix: "checked/", payload: 1 });`;
    for (const [prefix, error] of [
      ['5', 'prefix: a string is needed'],
      ['"../elsewhere/"', 'prefix: "." and ".." segments are not allowed'],
    ] as const) {
      const { run } = await runOnce(api, forged(prefix), {});
      expect(run.status).toBe('succeeded');
      const [row] = await settledSends(configured, run.id, 1);
      expect(rowView(row!)).toEqual({ kind: 's3', state: 'failed', attempt: 1, status_code: null, last_error: error });
    }
  });

  it('fails $.send.s3 into a bucket that does not exist at once', async () => {
    const { api } = await account(configured);
    const { run } = await runOnce(api, `$.send.s3({ bucket: "no-such-bucket", payload: { n: 1 } });`, {});
    const [row] = await settledSends(configured, run.id, 1);
    expect(rowView(row!)).toMatchObject({ kind: 's3', state: 'failed', attempt: 1, status_code: 404 });
    expect(row!.last_error).toBe('bucket "no-such-bucket": NoSuchBucket: The specified bucket does not exist');
  });

  it("makes another account's send at once while one account's hanging destinations hold all the slots it may", async () => {
    // The outbox has 16 slots; one account holds 14 at most. Hanging attempts end only after two minutes.
    const patient = await startTestServer(dialect, { allowPrivateNetwork: true, webhookTimeout: 120 });
    try {
      const hog = await account(patient);
      const hangAt = `/sends-hang-${dialect}`;
      receiver.answerAt(hangAt, () => 'hang');
      const hogged = await runOnce(hog.api, `for (let i = 0; i < 20; i++) $.send.http({ url: steps.trigger.event.base + "${hangAt}", data: { i } });`, {
        base: receiver.url,
      });
      expect(hogged.run.status).toBe('succeeded');
      await waitFor(
        async () => receiver.on(hangAt).length,
        (n) => n === 14,
        { what: 'the hogging account to hold 14 slots' },
      );

      const other = await account(patient);
      const at = `/sends-prompt-${dialect}`;
      const { run } = await runOnce(other.api, `$.send.http({ url: steps.trigger.event.base + "${at}", data: "not kept waiting" });`, { base: receiver.url });
      const [row] = await settledSends(patient, run.id, 1);
      expect(rowView(row!)).toEqual({ kind: 'http', state: 'succeeded', attempt: 1, status_code: 200, last_error: null });
      expect(receiver.on(hangAt)).toHaveLength(14);
    } finally {
      await patient.destroy();
    }
  });

  it('fails the step with a ConfigurationError when email or S3 is not configured, and carries out none of its sends', async () => {
    const { api } = await account(bare);
    const path = `/http-${dialect}-unconfigured`;
    for (const [send, message] of [
      ['$.send.email({ subject: "s", text: "t" })', "$.send.email() needs the server's --smtp-url setting; nothing of this step was committed"],
      [
        `$.send.s3({ bucket: "${BUCKET}", payload: {} })`,
        "$.send.s3() needs the server's --s3-access-key-id and --s3-secret-access-key settings (and --s3-endpoint for a store other than AWS S3); nothing of this step was committed",
      ],
    ] as const) {
      const { run } = await runOnce(api, `$.send.http({ method: "POST", url: "${receiver.url}${path}" }); ${send};`, {});
      expect(run.status).toBe('failed');
      expect(run.steps).toHaveLength(1);
      expect(run.steps[0].error).toMatchObject({ name: 'ConfigurationError', code: 'send_unavailable', message });
      expect(await sendsOfRuns(bare.running.services.store.db, [run.id])).toEqual([]);
    }
    expect(receiver.on(path)).toEqual([]);
  });

  it('keeps what a failed step keeps when a send is not configured, and commits none of its $.service.db writes', async () => {
    const { api } = await account(bare);
    // Caught or not, the send fails the step. The step's exports and logs were dropped (duration 0), and its
    // $.service.db write was committed, though the error said nothing of the step was.
    const code = `module.exports = { props: { db: "$.service.db" }, async run({ $ }) {
      console.log("about to mail"); $.export("got", "far"); this.db.set("k", 1);
      try { $.send.email({ subject: "s", text: "t" }); } catch (error) { console.log("caught", error.name); }
      return "went on"; } };`;
    const created = await api.post('/v1/workflows', { name: 'mails', steps: [{ name: 'mail', component_code: code }] });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const started = await api.post(`/v1/workflows/${created.body.data.id}/run`, {});
    const { body } = await waitFor(
      () => api.get(`/v1/workflows/${created.body.data.id}/runs/${started.body.data.id}`),
      (r) => r.body.data?.status === 'failed' || r.body.data?.status === 'succeeded',
      { what: 'the run to finish' },
    );
    const [step] = body.data.steps;
    const message = "$.send.email() needs the server's --smtp-url setting; nothing of this step was committed";
    expect([body.data.status, step.status, step.exports, step.logs.map((line: { msg: string }) => line.msg), step.$return_value]).toEqual([
      'failed',
      'failed',
      { got: 'far' },
      ['about to mail', 'caught ConfigurationError'],
      undefined,
    ]);
    expect(step.error).toMatchObject({ name: 'ConfigurationError', code: 'send_unavailable', message });
    const db = bare.running.services.store.db;
    expect(await db.selectFrom('workflow_step_db').selectAll().where('workflow_id', '=', created.body.data.id).execute()).toEqual([]);
  });

  it('never carries out the sends of a step that fails', async () => {
    const { api, email } = await account(configured);
    const failing = `/http-${dialect}-failing-step`;
    const after = `/http-${dialect}-after-failing-step`;
    const code = `
      $.send.http({ method: "POST", url: "${receiver.url}${failing}" });
      $.send.email({ subject: "never", text: "never" });
      $.send.s3({ bucket: "${BUCKET}", prefix: "never/", payload: {} });
      throw new Error("the step fails after queueing its sends");`;
    const { run } = await runOnce(api, code, {});
    expect(run.status).toBe('failed');
    expect(run.steps[0].error).toMatchObject({ message: 'the step fails after queueing its sends' });
    expect(await sendsOfRuns(configured.running.services.store.db, [run.id])).toEqual([]);
    // The outbox holds nothing of the failed step; a later send of the account goes out, and none of the failed step's does.
    const later = await runOnce(api, `$.send.http({ method: "POST", url: "${receiver.url}${after}" });`, {});
    await settledSends(configured, later.run.id, 1);
    expect(receiver.on(after)).toHaveLength(1);
    expect(receiver.on(failing)).toEqual([]);
    expect(smtp.to(email)).toEqual([]);
    expect((await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'never/' }))).Contents ?? []).toEqual([]);
  });
});

describe('settings of workflow sends', () => {
  it('refuses S3 settings that cannot work together, and never echoes an SMTP URL that may hold a password', () => {
    expect(() => resolveConfig({ s3AccessKeyId: 'key' })).toThrow(ConfigError);
    expect(() => resolveConfig({ s3AccessKeyId: 'key' })).toThrow('--s3-access-key-id and --s3-secret-access-key go together: set both or neither');
    expect(() => resolveConfig({ s3Endpoint: 'http://127.0.0.1:9000' })).toThrow('--s3-endpoint needs --s3-access-key-id and --s3-secret-access-key');
    const withEndpoint = resolveConfig({ s3Endpoint: 'http://127.0.0.1:9000', s3AccessKeyId: 'key', s3SecretAccessKey: 'secret' });
    expect(withEndpoint).toMatchObject({ s3ForcePathStyle: true, s3Region: 'us-east-1', emailFrom: 'tributary@localhost', smtpUrl: undefined });
    expect(resolveConfig({ s3AccessKeyId: 'key', s3SecretAccessKey: 'secret' }).s3ForcePathStyle).toBe(false);

    const smtp = SETTINGS.find((s) => s.flag === '--smtp-url')!;
    expect(smtp.parse('smtps://user:pw@mail.example.com:465')).toBe('smtps://user:pw@mail.example.com:465');
    let message = '';
    try {
      smtp.parse('http://user:hunter2@mail.example.com');
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toBe('expected an smtp:// or smtps:// URL with a host, such as smtp://user:password@mail.example.com:587');
  });
});

describe('a node paused while its send is answered', () => {
  // As for webhooks: the answer came within a second, during a pause that outlasted the time-out; it counts, and the
  // send is not made again (it was, after "no response within 1 s", when the deadline fired before the answer was read).
  it('records the answer that arrived during the pause: one request, succeeded at the first attempt', async () => {
    await withPausedNode(async (calls, receiver) => {
      const created = await calls.post('/v1/workflows', {
        name: 'paused send',
        steps: [
          {
            name: 'send',
            component_code: `export default defineComponent({ async run({ $ }) { $.send.http({ url: "${receiver.url}/send", data: { n: 1 } }); } })`,
          },
        ],
      });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const { id } = created.body.data;
      expect((await calls.post(`/v1/workflows/${id}/run`, { body: {} })).status).toBe(202);
      const runs = await waitFor(
        () => calls.get(`/v1/workflows/${id}/runs`),
        (r) => r.body.data[0]?.steps?.[0]?.sends?.some((s: { state: string; attempt: number }) => s.state !== 'pending' || s.attempt > 1),
        { what: 'the send to be recorded' },
      );
      expect(runs.body.data[0].steps[0].sends).toEqual([{ kind: 'http', state: 'succeeded', attempt: 1, status_code: 200 }]);
      expect(receiver.received).toHaveLength(1);
    });
  });
});
