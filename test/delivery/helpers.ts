// Shared pieces of the delivery tests: a webhook receiver on 127.0.0.1 (and one that pauses its sender), an account
// with helpers, SSE clients.
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import { EventSource } from 'eventsource';
import { waitFor } from '../helpers/wait.js';
import type { TestServer } from '../helpers/server.js';
import { client as makeClient, type client } from '../helpers/client.js';
import { createAccount, freshStorage, killHard, serve } from '../helpers/processes.js';
import { account as baseAccount, emitsOf } from '../helpers/account.js';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  receivedAt: number;
}

/**
 * What the receiver answers: a status with optional headers and body, after `delayMs` if given or once `after`
 * resolves (the test says when), 'hang' to never answer, or 'stall' to answer 200 with a body that never ends.
 */
export type Answer = { status: number; headers?: Record<string, string>; body?: string; delayMs?: number; after?: Promise<unknown> } | 'hang' | 'stall';

export interface Receiver {
  readonly url: string;
  readonly requests: ReceivedRequest[];
  /** Requests received on one path. */
  on(path: string): ReceivedRequest[];
  /**
   * Sets how the receiver answers requests on one path (every other path gets 200); `nth` counts that path's
   * requests from 1. Each test uses paths of its own, so no test's answers outlive it or reach another test.
   */
  answerAt(path: string, fn: (request: ReceivedRequest, nth: number) => Answer): void;
  close(): Promise<void>;
}

/** A webhook receiver on 127.0.0.1 and a free port, recording every request. */
export async function startReceiver(): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const hanging = new Set<http.ServerResponse>();
  const answers = new Map<string, (request: ReceivedRequest, nth: number) => Answer>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const received = { method: req.method!, path: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), receivedAt: Date.now() };
      requests.push(received);
      const answer = answers.get(received.path);
      const given: Answer = answer ? answer(received, requests.filter((r) => r.path === received.path).length) : { status: 200 };
      if (given === 'hang' || given === 'stall') {
        hanging.add(res);
        if (given === 'stall') {
          res.writeHead(200, { 'content-length': '10' });
          res.write('ab');
        }
        return;
      }
      const send = () => {
        res.writeHead(given.status, given.headers ?? {});
        res.end(given.body ?? 'ok');
      };
      if (given.after) void given.after.then(send);
      else if (given.delayMs) setTimeout(send, given.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    on: (path) => requests.filter((r) => r.path === path),
    answerAt: (path, fn) => {
      answers.set(path, fn);
    },
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type Api = ReturnType<typeof client>;

/** A fresh account on the server (so that globs and auto-subscriptions see only this test's sources), with delivery calls. */
export async function account(server: TestServer) {
  const base = await baseAccount(server);
  const api = () => base.api;

  async function subscribe(emitterId: string, listenerId: string, eventName?: string) {
    const query = new URLSearchParams({ emitter_id: emitterId, listener_id: listenerId, ...(eventName !== undefined && { event_name: eventName }) });
    const res = await api().post(`/v1/subscriptions?${query}`);
    expect(res.status).toBe(200);
    return res.body.data as { id: string; emitter_id: string; listener_id: string; event_name: string };
  }

  async function createWebhook(url: string, name = 'hook'): Promise<{ id: string; secret: string }> {
    const res = await api().post(`/v1/webhooks?${new URLSearchParams({ url, name, description: 'test' })}`);
    expect(res.status).toBe(200);
    return res.body.data;
  }

  async function deliveriesOf(webhookId: string, until: (rows: any[]) => boolean, what = 'deliveries'): Promise<any[]> {
    const res = await waitFor(
      () => api().get(`/v1/webhooks/${webhookId}/deliveries?limit=100`),
      (r) => r.status === 200 && until(r.body.data),
      { what },
    );
    return res.body.data;
  }

  return Object.assign(base, { subscribe, createWebhook, deliveriesOf });
}

export { emitsOf };

/** An EventSource that sends the key (and optionally a Last-Event-ID) with its requests, collecting messages. */
export function openStream(url: string, key: string, headers: Record<string, string> = {}) {
  const messages: MessageEvent[] = [];
  const source = new EventSource(url, {
    fetch: (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${key}`, ...headers } }),
  });
  source.onmessage = (message) => messages.push(message);
  const opened = new Promise<void>((resolve, reject) => {
    source.onopen = () => resolve();
    source.onerror = (error) => reject(new Error(`stream failed to open: ${error.message ?? error.code}`));
  });
  return { source, messages, opened, data: () => messages.map((m) => JSON.parse(m.data as string)) };
}

export interface PausingReceiver {
  /** Where the node sends: http://127.0.0.1:<port>. */
  url: string;
  /** Every request's headers, in order. */
  received: http.IncomingHttpHeaders[];
  close: () => void;
}

/**
 * Answers every request 200 `ok`. Before its first answer it stops `node` (SIGSTOP), so the answer is waiting unread
 * when the node runs again `pauseMs` later (SIGCONT), past an attempt's time-out shorter than that.
 */
export async function pausingReceiver(node: ChildProcess, pauseMs = 2000): Promise<PausingReceiver> {
  const received: http.IncomingHttpHeaders[] = [];
  const receiver = http.createServer((req, res) => {
    req.resume();
    received.push(req.headers);
    if (received.length > 1) return void res.end('ok');
    node.kill('SIGSTOP');
    res.end('ok', () => setTimeout(() => node.kill('SIGCONT'), pauseMs));
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`, received, close: () => receiver.close() };
}

/**
 * Runs `test` against a node of its own (SQLite, an account, a 1 s attempt time-out and retry, private addresses
 * allowed) and a pausingReceiver that stops it before its first answer; then resumes, kills and removes the node.
 */
export async function withPausedNode(test: (calls: ReturnType<typeof client>, receiver: PausingReceiver) => Promise<void>): Promise<void> {
  const storage = await freshStorage('sqlite');
  const key = await createAccount(storage.args, 'paused');
  const node = await serve([...storage.args, '--webhook-timeout', '1', '--webhook-retry-schedule', '1', '--allow-private-network']);
  // Stopped before it can read the answer, resumed past its time-out.
  const receiver = await pausingReceiver(node.child);
  try {
    await test(makeClient(node.url, key), receiver);
  } finally {
    node.child.kill('SIGCONT');
    await killHard(node.child);
    receiver.close();
    await storage.cleanup();
  }
}
