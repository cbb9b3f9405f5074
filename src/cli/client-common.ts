// What every client command shares: the --profile/--url/--key flags, the API client they name, where output goes,
// and how a kind of resource is listed.
import type { Command } from 'commander';
import { ApiClient } from '../client/api.js';
import { resolveServer, type ServerChoice } from '../client/profiles.js';
import { formatTable, type ResourceKind } from '../client/resources.js';

export interface ServerFlags extends ServerChoice {
  json?: boolean;
}

/** Progress and notices: standard error, so that standard output stays what scripts read. */
export function say(line: string): void {
  process.stderr.write(`${line}\n`);
}
export function out(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** --profile, --url and --key on every client command. */
export function serverOptions(command: Command): Command {
  return command
    .option('--profile <name>', 'a profile saved by tributary login (default: the last one logged in; TRIBUTARY_PROFILE)')
    .option('--url <url>', "the server's URL, over the profile's (TRIBUTARY_URL)")
    .option('--key <key>', "an API key, over the profile's (TRIBUTARY_KEY)");
}

/** The client of the server the flags name; `signal` (a command's Ctrl-C) ends its calls in flight. */
export function apiFor(flags: ServerFlags, signal?: AbortSignal): ApiClient {
  return new ApiClient(resolveServer(flags), signal);
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
