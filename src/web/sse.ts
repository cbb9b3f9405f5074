// Reads a Server-Sent Events stream with fetch(), because EventSource cannot send the Authorization header and the key
// must not go in the URL; reconnects with Last-Event-ID so that no event is missed or repeated.
import { authHeaders, describeError, parseAnswer, refusal, signOutBecause } from './api';

export interface StreamHandlers {
  onEvent: (id: string, data: string) => void;
  /** `why`: while reconnecting after the server refused the stream (a 429 say), its reason and status. */
  onState: (state: 'live' | 'reconnecting', why?: string) => void;
  /** A 401 or 404: reconnecting would not help. */
  onFatal: (status: number) => void;
}

/**
 * How long a stream may stay silent before it is taken as lost: the server's heartbeat comes every 15 s, so four
 * missed ones mean a link that froze (a sleeping laptop, a proxy that dropped the connection without a word), on
 * which the table said Live forever and missed every event; `tributary events -f` gives up on the same minute.
 */
const SILENCE_MS = 60_000;

/** Streams until `signal` aborts. `lastEventId` is where to start: the newest event the caller already has. */
export async function followStream(path: string, lastEventId: string | undefined, signal: AbortSignal, handlers: StreamHandlers): Promise<void> {
  let last = lastEventId;
  let delay = 500;
  while (!signal.aborted) {
    let why: string | undefined;
    // This connection's own abort: the caller's, or the silence's.
    const attempt = new AbortController();
    const stop = () => attempt.abort();
    signal.addEventListener('abort', stop, { once: true });
    let silence: ReturnType<typeof setTimeout> | undefined;
    const heard = () => {
      clearTimeout(silence);
      silence = setTimeout(stop, SILENCE_MS);
    };
    try {
      heard();
      const headers: Record<string, string> = { ...authHeaders(), accept: 'text/event-stream' };
      if (last) headers['last-event-id'] = last;
      const response = await fetch(`/v1${path}`, { headers, signal: attempt.signal, credentials: 'omit', cache: 'no-store' });
      if (response.status === 401 || response.status === 404) {
        handlers.onFatal(response.status);
        if (response.status === 401) signOutBecause(((await response.json().catch(() => ({}))) as { error?: string }).error ?? 'the key was refused');
        return;
      }
      if (!response.ok || !response.body) {
        why = describeError(refusal(response.status, response.statusText, parseAnswer(await response.text()), false));
        throw new Error(why);
      }
      handlers.onState('live');
      delay = 500;
      await readFrames(
        response.body,
        (id, data) => {
          if (id) last = id;
          handlers.onEvent(id, data);
        },
        heard,
      );
    } catch (error) {
      if (signal.aborted) return;
      void error;
    } finally {
      clearTimeout(silence);
      signal.removeEventListener('abort', stop);
    }
    if (signal.aborted) return;
    handlers.onState('reconnecting', why);
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 10_000);
  }
}

/**
 * Splits the byte stream into frames (a blank line ends one) and hands over each frame's `id`, `data` and `event`;
 * `onBytes` hears each chunk read, heartbeats included.
 */
export async function readFrames(
  body: ReadableStream<Uint8Array>,
  onFrame: (id: string, data: string, event: string) => void,
  onBytes: () => void = () => {},
): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    onBytes();
    // stream: true keeps a character split across two chunks whole.
    buffer += decoder.decode(value, { stream: true });
    let end = buffer.search(/\r?\n\r?\n/);
    while (end >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
      let id = '';
      let event = 'message';
      const data: string[] = [];
      for (const line of frame.split(/\r?\n/)) {
        // Lines starting with ':' are comments (the server's handshake and heartbeat).
        if (line.startsWith('id:')) id = line.slice(3).trim();
        else if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (data.length) onFrame(id, data.join('\n'), event);
      end = buffer.search(/\r?\n\r?\n/);
    }
  }
}
