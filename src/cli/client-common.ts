// What every client command shares: the --profile/--url/--key/--timeout flags, the API client they name, where output
// goes, and how a kind of resource is listed.
import type { Command } from 'commander';
import { ApiClient } from '../client/api.js';
import { resolveServer, type ServerChoice } from '../client/profiles.js';
import { formatTable, type ResourceKind } from '../client/resources.js';
import { CODE_WAIT_SECONDS, DEFAULT_TIMEOUT_SECONDS, resolveTimeout } from '../client/timeouts.js';

export interface ServerFlags extends ServerChoice {
  json?: boolean;
  timeout?: string;
}

const NOTE_TIMEOUT_MS = 2000;

/** Progress and notices: standard error, so that standard output stays what scripts read. */
export function say(line: string): void {
  process.stderr.write(`${line}\n`);
}
export function out(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** --profile, --url, --key and --timeout on every client command. */
export function serverOptions(command: Command): Command {
  return timeoutOption(
    command
      .option('--profile <name>', 'a profile saved by tributary login (default: the last one logged in; TRIBUTARY_PROFILE)')
      .option('--url <url>', "the server's URL, over the profile's (TRIBUTARY_URL)")
      .option('--key <key>', "an API key, over the profile's (TRIBUTARY_KEY)"),
  );
}

/** --timeout, on every command that talks to a server (login too, which takes no profile). */
export function timeoutOption(command: Command): Command {
  return command.option(
    '--timeout <seconds>',
    `seconds to wait for each answer of the server, 0 for no limit (TRIBUTARY_TIMEOUT; default ${DEFAULT_TIMEOUT_SECONDS}, and ${CODE_WAIT_SECONDS} for what runs the component's hooks); a stream, once it answers, runs on`,
  );
}

/** The client of the server the flags name; `signal` (a command's Ctrl-C) ends its calls in flight. */
export function apiFor(flags: ServerFlags, signal?: AbortSignal): ApiClient {
  return new ApiClient(resolveServer(flags), { signal, timeoutMs: resolveTimeout(flags.timeout) });
}

/**
 * Says so when the server is an api node of a cluster with no worker node alive: it acknowledges and queues, so a
 * run asked for would otherwise wait with no word why. Best effort, and brief: a server whose /readyz is not
 * reached (a proxy that does not pass it) says nothing, and holds the command up 2 s at most.
 */
export async function noteNoWorkerNode(flags: ServerFlags, waiting: string): Promise<void> {
  const api = new ApiClient(resolveServer(flags), { timeoutMs: NOTE_TIMEOUT_MS });
  const ready = await api.call<{ checks?: { worker_nodes?: unknown } } | undefined>('GET', '/readyz').catch(() => undefined);
  if (ready?.checks?.worker_nodes !== 'none') return;
  say(`note: no worker node of this cluster is alive (${api.server.url}/readyz says "worker_nodes":"none"): ${waiting} until one starts`);
}

/** Every item of the kind's list, newest first: a table, or one JSON object a line with --json. */
export async function printList(kind: ResourceKind, flags: ServerFlags): Promise<void> {
  const { items: rows, total } = await apiFor(flags).all<Record<string, unknown>>(kind.listPath);
  // Said on standard error, so that --json output stays one object per line.
  if (total > rows.length) say(`the newest ${rows.length} of ${total} ${kind.plural}`);
  if (flags.json) for (const row of rows) out(JSON.stringify(row));
  else if (rows.length === 0) say(`no ${kind.plural}`);
  else out(formatTable(kind, rows));
}
