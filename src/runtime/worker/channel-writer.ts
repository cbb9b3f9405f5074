// Writes the worker's messages to the server's pipe itself, each frame whole before the caller goes on.
// Node's channel writes what the pipe takes at once and queues the rest, to be written by the event loop: a component
// that then blocks in a synchronous loop never lets that loop run, and what waited in the queue (the console lines it
// logged last, hundreds of KB at once) died with the worker when its time limit killed it. Written here, a frame is in
// the kernel's buffer when `send` returns, and the server reads what is there to the end after a kill
// (worker-process.ts). The frames are Node's own ('advanced' serialization), so the server reads them as before.
import fs from 'node:fs';
import v8 from 'node:v8';

/** How Node's 'advanced' serialization marks a host object (lib/internal/child_process/serialization.js). */
const ARRAY_BUFFER_VIEW = 0;
const OTHER_HOST_OBJECT = 1;

// Taken before any component code runs; the serializer classes are frozen by harden.ts.
const { apply } = Reflect;
const { isView } = ArrayBuffer;
const { wait } = Atomics;
const { min } = Math;
const writeSync = fs.writeSync;
const writeDefaultHostObject = (v8.DefaultSerializer.prototype as unknown as { _writeHostObject(object: object): void })._writeHostObject;

/** Writes what Node's ChildProcessSerializer writes. */
class ChannelSerializer extends v8.DefaultSerializer {
  _writeHostObject(object: object): void {
    if (isView(object)) {
      this.writeUint32(ARRAY_BUFFER_VIEW);
      apply(writeDefaultHostObject, this, [object]);
      return;
    }
    this.writeUint32(OTHER_HOST_OBJECT);
    this.writeValue({ ...object });
  }
}
Object.freeze(ChannelSerializer);
Object.freeze(ChannelSerializer.prototype);

/** Room for the frame's length, written over once the value's is known. */
const LENGTH_PLACEHOLDER = new Uint8Array(4);

/**
 * While the server has not read what the pipe holds: the first wait is short (it reads as fast as it can), later ones
 * longer, up to a few ms, so that a worker waiting on a busy server does not spin.
 */
const FIRST_WAIT_MS = 0.05;
const LONGEST_WAIT_MS = 4;
const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** Whether the write failed only because the pipe is full for now (the descriptor is non-blocking: Node set it so). */
function pipeFull(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'EAGAIN';
}

/**
 * A sender that writes each message as one frame to `fd`, waiting (synchronously) while the pipe is full. `lost` is
 * called when the pipe cannot be written at all (the server gone, the descriptor closed): nothing more can be said.
 */
export function channelWriter(fd: number, lost: () => never): (message: unknown) => void {
  return (message) => {
    const serializer = new ChannelSerializer();
    serializer.writeRawBytes(LENGTH_PLACEHOLDER);
    serializer.writeHeader();
    serializer.writeValue(message);
    const frame = serializer.releaseBuffer();
    // Indexed writes and `length` (pinned by harden.ts) look up nothing component code could replace.
    const total = frame.length;
    const length = total - 4;
    frame[0] = length >>> 24;
    frame[1] = (length >>> 16) & 0xff;
    frame[2] = (length >>> 8) & 0xff;
    frame[3] = length & 0xff;
    let written = 0;
    let waitMs = FIRST_WAIT_MS;
    while (written < total) {
      try {
        written += writeSync(fd, frame, written, total - written, null);
        waitMs = FIRST_WAIT_MS;
      } catch (error) {
        if (!pipeFull(error)) lost();
        wait(sleeper, 0, 0, waitMs);
        waitMs = min(waitMs * 2, LONGEST_WAIT_MS);
      }
    }
  };
}
