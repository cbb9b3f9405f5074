// The terminal side of client commands: questions (hidden for secrets), and what an error prints and exits with.
import readline from 'node:readline/promises';
import { Writable } from 'node:stream';
import { ApiError, detailLines } from '../client/api.js';
import { BundleError } from '../client/bundle.js';
import { ProfileError } from '../client/profiles.js';
import { KINDS } from '../client/resources.js';
import type { Ask } from '../client/props-input.js';
import { escapedControls } from '../client/terminal-text.js';
import { UsageError } from '../client/usage-error.js';
import { WorkflowFileError } from '../client/workflow-file.js';

/**
 * Exit codes scripts can trust; the README lists them. `timeout` is not `unreachable`: the server took the request and
 * may have done it, so a script must look before it tries a write again.
 */
export const EXIT = { ok: 0, failed: 1, usage: 2, notFound: 3, auth: 4, unreachable: 5, timeout: 6 } as const;

/** Asks on the terminal (or, with --interactive, reads answers from standard input's lines). */
export function terminalAsk(): { ask: Ask; close: () => void } {
  let muted = false;
  const output = new Writable({
    write(chunk: Buffer, _encoding, done) {
      if (!muted) process.stderr.write(chunk);
      done();
    },
  });
  const rl = readline.createInterface({ input: process.stdin, output, terminal: process.stdin.isTTY === true });
  // On a terminal readline reads keys raw, so Ctrl-C reaches it as a key, not as a signal: left alone it would close
  // the questions and nothing else (`dev` would need a second Ctrl-C to stop). It is made the signal it means.
  rl.on('SIGINT', () => process.kill(process.pid, 'SIGINT'));
  // Lines are queued by the iterator: piped answers arrive all at once, before the questions are asked.
  const lines = rl[Symbol.asyncIterator]();
  const ask: Ask = async (question, options) => {
    process.stderr.write(question);
    muted = options?.secret === true && process.stdin.isTTY === true;
    try {
      const line = await lines.next();
      if (line.done) throw new UsageError('standard input ended before every question was answered');
      if (process.stdin.isTTY !== true) process.stderr.write('\n');
      return line.value;
    } finally {
      if (muted) process.stderr.write('\n');
      muted = false;
    }
  };
  return { ask, close: () => rl.close() };
}

export function isInteractive(): boolean {
  return process.stdin.isTTY === true && process.stderr.isTTY === true;
}

const HINTS: Record<string, string> = {
  unauthorized: 'the key was refused: check it, or log in again with tributary login --url … --key …',
  // Every kind `list` takes, from its own table: a kind added there is named here too.
  not_found: `see what the account has with tributary list <${KINDS.map((kind) => kind.plural).join('|')}>`,
  unreachable: 'is the server running there? check the URL with tributary whoami, or pass --url',
  rate_limited: 'too many requests: wait a little and try again',
  quota_exceeded: "the account's quota is used up for now: see tributary whoami",
  // The server's code for a 503 (src/model/errors.ts): under another name this hint was never shown.
  unavailable: 'the server is stopping or cannot reach its database right now: try again shortly',
  stream_ended: 'the save may have finished all the same: see tributary list components (or workflows) before trying again',
};

/** What a failed command prints (standard error) and the code it exits with. */
export function describeFailure(error: unknown): { lines: string[]; code: number } | undefined {
  if (error instanceof ApiError) {
    // The server's words may quote what was sent (a name, a key) and a detail names it as it is: a control character in
    // one is written as its escape, so that it reaches the terminal as text, not as a command.
    const lines = [escapedControls(`error: ${error.message} (${error.status ? `${error.status} ` : ''}${error.code})`)];
    for (const detail of error.details) lines.push(...detailLines(detail));
    const hint = error.hint ?? HINTS[error.code];
    if (hint) lines.push(`hint: ${hint}`);
    const code =
      error.status === 0 && error.code === 'timeout'
        ? EXIT.timeout
        : // Unreachable, unavailable, or asked to wait (429): each says "try again later", not "fix the command".
          error.status === 0 || error.status === 503 || error.status === 429
          ? EXIT.unreachable
          : error.status === 401 || error.status === 403
            ? EXIT.auth
            : error.status === 404
              ? EXIT.notFound
              : error.status >= 400 && error.status < 500
                ? EXIT.usage
                : EXIT.failed;
    return { lines, code };
  }
  // `serve`'s port (or --metrics-port) taken or not allowed: said in words that say what to change (exit 1, as a failed start).
  const listen = error as NodeJS.ErrnoException & { address?: string; port?: number };
  if (listen?.syscall === 'listen' && (listen.code === 'EADDRINUSE' || listen.code === 'EACCES' || listen.code === 'EADDRNOTAVAIL')) {
    const where = listen.port ? `${listen.address ?? ''}:${listen.port}` : (listen.address ?? '');
    const why =
      listen.code === 'EADDRINUSE'
        ? 'another process is using it: stop that, or choose another port (--port, --metrics-port; 0 picks a free one)'
        : listen.code === 'EACCES'
          ? 'this user may not (a port below 1024 needs privileges): choose a port of 1024 or more'
          : 'this machine has no such address: choose another --host (or --metrics-host)';
    return { lines: [`error: cannot listen on ${where}: ${why}`], code: EXIT.failed };
  }
  // A --host or --metrics-host name that does not resolve: Node's own words (`getaddrinfo ENOTFOUND nope`) named no flag.
  const lookup = error as NodeJS.ErrnoException & { hostname?: string };
  if (lookup?.syscall === 'getaddrinfo' && lookup.code === 'ENOTFOUND' && lookup.hostname) {
    return { lines: [`error: cannot listen on ${lookup.hostname}: no such host name: choose another --host (or --metrics-host)`], code: EXIT.failed };
  }
  if (error instanceof UsageError || error instanceof ProfileError || error instanceof WorkflowFileError || error instanceof BundleError) {
    return { lines: error.message.split('\n').map((line, i) => (i === 0 ? `error: ${line}` : line)), code: EXIT.usage };
  }
  return undefined;
}
