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

/** Every item of the kind's list, newest first: a table, or one JSON object a line with --json. */
export async function printList(kind: ResourceKind, flags: ServerFlags): Promise<void> {
  const { items: rows, total } = await apiFor(flags).all<Record<string, unknown>>(kind.listPath);
  // Said on standard error, so that --json output stays one object per line.
  if (total > rows.length) say(`the newest ${rows.length} of ${total} ${kind.plural}`);
  if (flags.json) for (const row of rows) out(JSON.stringify(row));
  else if (rows.length === 0) say(`no ${kind.plural}`);
  else out(formatTable(kind, rows));
}
