// The server's end of a worker's IPC channel, framed here rather than by Node, so that a frame's announced length is checked before its bytes are kept.
// Node's own reader (fork's 'ipc') keeps every byte of a frame until it is whole, whatever length its header announces
// (up to 4 GB), and component code can write a header to the channel's descriptor itself: one run held gigabytes of the
// server's memory that way. The worker reads through Node's channel (NODE_CHANNEL_FD) and writes Node's frames to it by
// hand (worker/channel-writer.ts).
import type { Readable, Writable } from 'node:stream';
import v8 from 'node:v8';

/**
 * The largest frame a worker may send. Its largest honest message, one call's outcome at every limit (8 MB of events,
 * 8 MB of db writes, 8 MB of step results, data stores, 1 MB of logs) or an 8 MB respond() body, is well below it, also
 * where its text takes two bytes a character.
 */
export const MAX_FRAME_BYTES = 96 * 1024 * 1024;

/** How Node's 'advanced' serialization marks a host object (lib/internal/child_process/serialization.js). */
const ARRAY_BUFFER_VIEW = 0;
const OTHER_HOST_OBJECT = 1;

/** The host-object hooks of V8's serializer classes, which @types/node does not declare. */
interface HostObjectHooks {
  _writeHostObject(object: object): void;
  _readHostObject(): unknown;
}
const defaultHooks = {
  write: (v8.DefaultSerializer.prototype as unknown as HostObjectHooks)._writeHostObject,
  read: (v8.DefaultDeserializer.prototype as unknown as HostObjectHooks)._readHostObject,
};

/** Writes what Node's ChildProcessSerializer writes, so that the worker's Node reads it as it reads its own. */
class ChannelSerializer extends v8.DefaultSerializer {
  _writeHostObject(object: object): void {
    if (ArrayBuffer.isView(object)) {
      this.writeUint32(ARRAY_BUFFER_VIEW);
      defaultHooks.write.call(this, object);
      return;
    }
    this.writeUint32(OTHER_HOST_OBJECT);
    this.writeValue({ ...object });
  }
}

/** Reads what the worker's Node wrote with ChildProcessSerializer. */
class ChannelDeserializer extends v8.DefaultDeserializer {
  _readHostObject(): unknown {
    return this.readUint32() === ARRAY_BUFFER_VIEW ? defaultHooks.read.call(this) : this.readValue();
  }
}

/** One frame as Node's channel frames it: the value's length (big-endian, 4 bytes), then the value. */
export function encodeFrame(message: unknown): Buffer {
  const serializer = new ChannelSerializer();
  serializer.writeHeader();
  serializer.writeValue(message);
  const body = serializer.releaseBuffer();
  const head = Buffer.allocUnsafe(4);
  head.writeUInt32BE(body.length);
  return Buffer.concat([head, body]);
}

/**
 * The bytes every frame of an honest worker opens with: V8's header, then `[token, …]` up to the token's end (the
 * runtime puts the token first beside every message, see InitMessage). Found by serializing such a message with the
 * serializer the worker uses, not written out by hand.
 */
export function tokenPrefix(token: string): Buffer {
  const body = encodeFrame([token, null]).subarray(4);
  const tokenBytes = Buffer.from(token, 'latin1');
  const at = body.indexOf(tokenBytes);
  if (at === -1) throw new Error('the token is not in its own frame');
  return Buffer.from(body.subarray(0, at + tokenBytes.length));
}

export interface ChannelReader {
  /** Each message, in order. */
  onMessage(message: unknown): void;
  /** The worker framed something no honest worker sends; nothing more is read. */
  onMalformed(reason: string): void;
}

/**
 * Reads frames from `input` and hands each message to `reader`; a frame past MAX_FRAME_BYTES is refused at its header,
 * and one that does not open with `prefix` (tokenPrefix) at its first bytes: component code writing to the channel's
 * descriptor could otherwise make the server keep and decode up to MAX_FRAME_BYTES before the token was looked at, in
 * each of an account's workers at once (four such runs took the server from 85 MB to 471 MB).
 */
export function readFrames(input: Readable, reader: ChannelReader, prefix?: Buffer): void {
  let chunks: Buffer[] = [];
  let buffered = 0;
  let stopped = false;
  const stop = (reason: string) => {
    stopped = true;
    chunks = [];
    buffered = 0;
    input.destroy();
    reader.onMalformed(reason);
  };
  input.on('data', (data: Buffer) => {
    if (stopped) return;
    chunks.push(data);
    buffered += data.length;
    while (buffered >= 4) {
      if (chunks[0]!.length < 4) chunks = [Buffer.concat(chunks)];
      const length = chunks[0]!.readUInt32BE(0);
      if (length > MAX_FRAME_BYTES) return stop(`malformed worker message: a frame of ${length} bytes, over the limit of ${MAX_FRAME_BYTES}`);
      if (prefix !== undefined) {
        const opening = Math.min(prefix.length, length);
        if (buffered < opening + 4) return;
        if (chunks[0]!.length < opening + 4) chunks = [Buffer.concat(chunks)];
        if (opening < prefix.length || !chunks[0]!.subarray(4, 4 + opening).equals(prefix)) {
          return stop("malformed worker message: it lacks the worker's token (written to the channel by component code?)");
        }
      }
      if (buffered < length + 4) return;
      const whole = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, buffered);
      const rest = whole.subarray(length + 4);
      chunks = rest.length > 0 ? [rest] : [];
      buffered = rest.length;
      let message: unknown;
      try {
        const deserializer = new ChannelDeserializer(whole.subarray(4, length + 4));
        deserializer.readHeader();
        message = deserializer.readValue();
      } catch (error) {
        return stop(`malformed worker message: ${error instanceof Error ? error.message : String(error)}`);
      }
      reader.onMessage(message);
      if (stopped) return;
    }
  });
}

/** Writes one message; false when the channel is gone (the worker's exit is reported on its own). */
export function writeFrame(output: Writable, message: unknown): boolean {
  if (output.destroyed || !output.writable) return false;
  output.write(encodeFrame(message));
  return true;
}
