// Component code and small clients shared by the contract and round-trip tests.
import { expect } from 'vitest';
import { request, type ApiResponse } from '../helpers/client.js';

/**
 * A source with one prop of every type the spec lists (app, boolean, integer, string, string[], object, the HTTP and
 * timer interfaces, the db service) and every user-input property of a prop (label, description, secret, min/max,
 * optional, default). An HTTP request's JSON body is emitted on the default stream, or on `body.channel`; a body with
 * `fail` makes the run throw (an `$errors` event); every run logs a line (a `$logs` event).
 */
export const SHOWCASE = `
module.exports = {
  key: "contract-showcase",
  name: "Contract Showcase",
  version: "1.2.3",
  description: "Every kind of prop the specification lists",
  props: {
    github: { type: "app", app: "github" },
    http: { type: "$.interface.http" },
    timer: { type: "$.interface.timer", default: { intervalSeconds: 3600 } },
    token: { type: "string", secret: true, label: "API token", description: "A **secret** token" },
    count: { type: "integer", min: 1, max: 10, label: "Count" },
    color: { type: "string", options: ["red", { label: "Green", value: "green" }], optional: true, default: "red" },
    enabled: { type: "boolean", optional: true },
    tags: { type: "string[]", optional: true },
    extra: { type: "object", optional: true },
    db: "$.service.db",
  },
  async run(event) {
    const body = (event && event.body) || {};
    console.log("request", event.method, event.path);
    if (body.fail) throw new Error(body.fail);
    this.$emit(body, body.channel ? { name: body.channel, summary: "on " + body.channel } : { summary: "default stream" });
  },
};
`;

/** A source with an HTTP interface and a secret, no timer: emits the secret it sees, to show that it was kept. */
export const HTTP_SECRET = `
module.exports = {
  key: "contract-http-secret",
  name: "Contract HTTP Secret",
  version: "0.1.0",
  props: {
    http: "$.interface.http",
    token: { type: "string", secret: true },
    label: { type: "string", optional: true, default: "plain" },
  },
  async run(event) {
    this.$emit({ token: this.token, label: this.label, body: event.body || null });
  },
};
`;

/** A source with a timer only. */
export const TIMER_ONLY = `
module.exports = {
  key: "contract-timer",
  name: "Contract Timer",
  version: "0.1.0",
  props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 3600 } } },
  async run(event) { this.$emit({ at: event.timestamp }); },
};
`;

/** The smallest source: no props, no hooks; cheap to deploy many times. */
export const TINY = `
module.exports = { key: "contract-tiny", name: "Contract Tiny", version: "0.0.1", async run() {} };
`;

/** A timer that never fires while the tests run (00:00 UTC on the 1st of January). */
export const YEARLY_CRON = '0 0 1 1 *';

export interface RawResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/**
 * Any request, including to the event stream: a `text/event-stream` answer is read until `until` holds for its
 * messages (or the first chunk when no `until` is given) and then closed.
 */
export async function send(
  method: string,
  url: string,
  options: { key?: string | null; body?: unknown; headers?: Record<string, string>; until?: (messages: SseMessage[]) => boolean } = {},
): Promise<RawResponse & { messages: SseMessage[] }> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let body: string | undefined;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] = 'application/json';
  }
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 20_000);
  try {
    const response = await fetch(url, { method, headers, body, signal: controller.signal });
    if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      const reader = response.body!.getReader();
      const decoder = new TextDecoder();
      let text = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
        if (!options.until || options.until(parseSse(text))) break;
      }
      controller.abort();
      return { status: response.status, headers: response.headers, body: undefined, text, messages: parseSse(text) };
    }
    const text = await response.text();
    let parsed: unknown = text;
    if ((response.headers.get('content-type') ?? '').includes('application/json') && text) parsed = JSON.parse(text);
    return { status: response.status, headers: response.headers, body: parsed, text, messages: [] };
  } finally {
    clearTimeout(timer);
  }
}

export interface SseMessage {
  id?: string;
  data?: string;
  comment?: string;
}

/** The complete messages of an event stream (blocks ended by a blank line). */
export function parseSse(text: string): SseMessage[] {
  const blocks = text.split('\n\n');
  blocks.pop(); // the part after the last blank line is not complete yet
  return blocks.map((block) => {
    const message: SseMessage = {};
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) message.comment = line.slice(1);
      else if (line.startsWith('id:')) message.id = line.slice(3).trim();
      else if (line.startsWith('data:')) message.data = (message.data === undefined ? '' : `${message.data}\n`) + line.slice(5).trimStart();
    }
    return message;
  });
}

/** Posts a JSON body to a source's HTTP endpoint and expects the 200 that says it is queued. */
export async function hit(endpointUrl: string, body: unknown): Promise<void> {
  const res = await request('POST', endpointUrl, { body });
  expect(res.status, `POST ${endpointUrl}: ${res.text}`).toBe(200);
}

/** `path?query` with a `/` added before the query (or at the end). */
export function withSlash(pathAndQuery: string): string {
  const [p, q] = pathAndQuery.split('?') as [string, string | undefined];
  return `${p.endsWith('/') ? p : `${p}/`}${q === undefined ? '' : `?${q}`}`;
}

/** `path?query` with the trailing `/` of the path removed. */
export function withoutSlash(pathAndQuery: string): string {
  const [p, q] = pathAndQuery.split('?') as [string, string | undefined];
  return `${p.replace(/\/+$/, '')}${q === undefined ? '' : `?${q}`}`;
}

export type { ApiResponse };

/** The seed workflow's steps: each emits `{ n, at }` unless the event asks the run to fail, which its second step does. */
export const WORKFLOW_STEPS = [
  {
    name: 'first',
    component_code: `export default defineComponent({ async run({ steps, $ }) {
      const event = steps.trigger.event;
      if (!event.fail) $.send.emit({ raw_event: { n: event.n, at: "first" } });
    } });`,
  },
  {
    name: 'second',
    component_code: `export default defineComponent({ async run({ steps, $ }) {
      const event = steps.trigger.event;
      if (event.fail) throw new Error(event.fail);
      $.send.emit({ raw_event: { n: event.n, at: "second" } });
    } });`,
  },
];
