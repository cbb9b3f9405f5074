// Reads a worker's stderr for the tail a crash report shows, and bounds how much of it the server reads per call.
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

/** Enough of stderr to find V8's out-of-memory report or our exit marker, which come last. */
const STDERR_TAIL_CHARS = 16 * 1024;

/**
 * The most bytes a worker may write to stderr from the start of one call to the start of the next. Nothing keeps
 * them (console output goes to the run's logs through the channel; stderr only serves the crash report's tail), but
 * the server reads every byte on its one thread: component code writing to descriptor 2 in a loop (`fs.writeSync(2,
 * …)`, `process.stderr.write`) pushed 1.2 GB through it in 3 s and held about half of that thread, which serves
 * every account's API and runs. Node's own reports (a stack, an out-of-memory trace) are a few KB.
 */
export const MAX_STDERR_BYTES_PER_CALL = 16 * 1024 * 1024;

export class WorkerStderr {
  private tailText = '';
  private sinceMark = 0;
  private readonly decoder = new StringDecoder('utf8');

  /** `onOverflow` is called once, when the bytes since the last mark pass MAX_STDERR_BYTES_PER_CALL. */
  constructor(stream: Readable | null, onOverflow: (message: string) => void) {
    let overflowed = false;
    stream?.on('data', (chunk: Buffer) => {
      this.tailText = (this.tailText + this.decoder.write(chunk)).slice(-STDERR_TAIL_CHARS);
      this.sinceMark += chunk.length;
      if (this.sinceMark > MAX_STDERR_BYTES_PER_CALL && !overflowed) {
        overflowed = true;
        onOverflow(
          `the worker wrote more than ${MAX_STDERR_BYTES_PER_CALL / (1024 * 1024)} MB to stderr in one call; nothing keeps stderr output: log with console instead`,
        );
      }
    });
  }

  /** The last characters the worker wrote. */
  get tail(): string {
    return this.tailText;
  }

  /** A call starts: its budget is whole again. */
  mark(): void {
    this.sinceMark = 0;
  }
}
