// The client half of `tributary`: commands that talk to any Tributary server over its REST API, and nothing else.
import path from 'node:path';
import { type Command, Option } from 'commander';
import { ApiClient, ApiError, InterruptedError } from '../client/api.js';
import { deploySource, type DeployOptions, updateSource } from '../client/deploy-source.js';
import { deployWorkflowFile } from '../client/deploy-workflow.js';
import { runDev } from '../client/dev.js';
import { showStream, type Stream } from '../client/follow.js';
import { DEFAULT_PROFILE, resolveServer, saveProfile, serverUrl } from '../client/profiles.js';
import { endpointUrl, KINDS, kindNamed, kindOfId } from '../client/resources.js';
import { streamName, subscribe, type SubscriptionTarget, unsubscribe } from '../client/subscriptions.js';
import { UsageError } from '../client/usage-error.js';
import { jsonText, yamlText } from '../client/terminal-text.js';
import { resolveTimeout, type Wait } from '../client/timeouts.js';
import { apiFor, noteNoWorkerNode, out, printList, say, type ServerFlags, serverOptions, timeoutOption } from './client-common.js';
import { addDataStoreCommands } from './data-store-commands.js';
import { EXIT, isInteractive, terminalAsk } from './terminal.js';

const collect = (value: string, previous: string[]) => [...previous, value];

/**
 * --name, --prop, --props-file and (where props are asked for: deploy and dev, not update, which keeps the stored
 * ones) --interactive; `name` says what --name defaults to for the command.
 */
function propOptions(command: Command, name: string, asks = true): Command {
  command
    .option('--name <name>', name)
    .option('--prop <name=value>', 'a prop value, typed as the prop (repeatable): --prop channel=general --prop limit=10', collect, [])
    .option('--props-file <file>', 'a JSON object of prop values (--prop values win)');
  if (asks) command.option('--interactive', 'ask for missing required props even when standard input is not a terminal (answers one per line)');
  return command;
}

/** Runs `work` until Ctrl-C (SIGINT) or SIGTERM; the signal given to it fires then. */
async function untilInterrupted<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T | undefined> {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    return await work(controller.signal);
  } catch (error) {
    // A call the stop cut short: the command ends as a stop does, quietly.
    if (error instanceof InterruptedError && controller.signal.aborted) return undefined;
    throw error;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

/** Runs `work` with questions on the terminal when one can be asked; `signal` (Ctrl-C) ends a question waiting then. */
async function withAsk<T>(interactive: boolean | undefined, work: (options: Pick<DeployOptions, 'ask'>) => Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!interactive && !isInteractive()) return work({ ask: undefined });
  const terminal = terminalAsk();
  signal?.addEventListener('abort', () => terminal.close(), { once: true });
  try {
    return await work({ ask: terminal.ask });
  } finally {
    terminal.close();
  }
}

/**
 * A reader that goes away (`tributary logs p_… --json | head -1`) ends a client command quietly, as Unix tools end
 * then: left alone, the next write would die of an unhandled EPIPE with a stack trace. Not `serve`: a server whose
 * output is gone must not look like one that stopped on purpose.
 */
function endQuietlyWhenOutputCloses(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      process.exit(EXIT.ok);
    });
  }
}

export function addClientCommands(program: Command): void {
  const before = new Set(program.commands);
  addCommands(program);
  for (const command of program.commands) if (!before.has(command)) command.hook('preAction', endQuietlyWhenOutputCloses);
}

function addCommands(program: Command): void {
  timeoutOption(
    program
      .command('login')
      .description('check a server URL and API key, and save them as a profile (in the XDG config directory, mode 0600)')
      .requiredOption('--url <url>', "the server's URL, e.g. http://localhost:3000")
      .requiredOption('--key <key>', 'an API key of the account (trb_…)')
      .option('--profile <name>', 'the profile name', DEFAULT_PROFILE),
  ).action(async (flags: { url: string; key: string; profile: string; timeout?: string }) => {
    const api = new ApiClient({ url: serverUrl(flags.url), key: flags.key }, { timeoutMs: resolveTimeout(flags.timeout) });
    const me = await api.get<{ data: { username: string; email: string } }>('/v1/users/me');
    const file = saveProfile(flags.profile, api.server);
    out(`logged in to ${api.server.url} as ${me.data.username} (profile "${flags.profile}", saved in ${file})`);
  });

  serverOptions(program.command('whoami').description('the account and server the client talks to'))
    .option('--json', 'the account as JSON')
    .action(async (flags: ServerFlags) => {
      const server = resolveServer(flags);
      const me = await new ApiClient(server, { timeoutMs: resolveTimeout(flags.timeout) }).get<{ data: Record<string, unknown> }>('/v1/users/me');
      if (flags.json) out(JSON.stringify({ url: server.url, profile: server.profile ?? null, account: me.data }));
      else out(`${me.data.username} <${me.data.email}> on ${server.url}${server.profile ? ` (profile "${server.profile}")` : ''}`);
    });

  propOptions(serverOptions(program.command('deploy [file]')), 'the source name (default: the name slug of the component)')
    .description('bundle a component file with its relative imports and deploy it as a source (or --workflow <file>)')
    .option('--workflow <file>', 'deploy a workflow file (YAML or JSON; see the README): created, or updated if one of its name exists')
    .option('--json', 'print the source (or workflow) as JSON')
    .action(async (file: string | undefined, flags: ServerFlags & DeployFlags & { workflow?: string }) => {
      const api = apiFor(flags);
      if (flags.workflow !== undefined) {
        if (file !== undefined) throw new UsageError('give a component file or --workflow <file>, not both');
        // A workflow file says its name and its steps' props itself: these flags were dropped without a word.
        const sourceOnly = [
          flags.name !== undefined && '--name',
          flags.prop.length > 0 && '--prop',
          flags.propsFile !== undefined && '--props-file',
          flags.interactive && '--interactive',
        ].filter(Boolean);
        if (sourceOnly.length) {
          throw new UsageError(`${sourceOnly.join(', ')} cannot be used with --workflow: the workflow file gives its name and each step's props`);
        }
        const { workflow, created } = await deployWorkflowFile(flags.workflow, api, say);
        // --json promises JSON alone on standard output, for a workflow as for a source.
        if (flags.json) {
          out(JSON.stringify(workflow));
          return;
        }
        out(`${created ? 'created' : 'updated'} workflow ${workflow.id} "${workflow.name}"`);
        if (workflow.trigger?.endpoint_url) out(`endpoint: ${workflow.trigger.endpoint_url}`);
        return;
      }
      if (file === undefined) throw new UsageError('give the component file to deploy: tributary deploy ./my-source.mjs');
      const source = await withAsk(flags.interactive, (asking) => deploySource(api, path.resolve(file), { ...deployOptions(flags), ...asking }));
      printSource('deployed', source, flags.json);
    });

  propOptions(serverOptions(program.command('update <id> <file>')), 'a new name for the source (default: it keeps its name)', false)
    .description("replace a source's code in place (same id, same endpoint URL); props given replace the stored ones")
    .option('--json', 'print the source as JSON')
    .action(async (id: string, file: string, flags: ServerFlags & DeployFlags) => {
      if (!id.startsWith('dc_')) throw new UsageError(`update takes a source id (dc_…), not "${id}"; workflows are updated with deploy --workflow`);
      printSource('updated', await updateSource(apiFor(flags), id, path.resolve(file), deployOptions(flags)), flags.json);
    });

  serverOptions(program.command('list [kind]'))
    .description(`list the account's ${listedKinds()}`)
    .option('--json', 'one JSON object per line')
    .action(async (plural: string | undefined, flags: ServerFlags) => {
      await printList(kindNamed(plural ?? KINDS[0]!.plural), flags);
    });

  serverOptions(program.command('describe <id>'))
    .description('one source, workflow, webhook, component, connected account or data store, in full (YAML; --json for JSON)')
    .option('--json', 'as JSON')
    .action(async (id: string, flags: ServerFlags) => {
      const kind = kindOfId(id);
      const item = (await apiFor(flags).get<{ data: unknown }>(kind.itemPath!(id))).data;
      out(flags.json ? jsonText(item, 2) : yamlText(item).trimEnd());
    });

  serverOptions(program.command('delete <id>'))
    .description('delete a source, workflow, webhook, connected account, or data store with all its records')
    .option('--force', 'a connected account in use: deactivate what uses it, then delete it')
    .action(async (id: string, flags: ServerFlags & { force?: boolean }) => {
      const kind = kindOfId(id);
      if (!kind.deletable) throw new UsageError(`${kind.plural} cannot be deleted through the API`);
      // A source's delete runs its deactivate() hook; a connected account's, with --force, those of what uses it.
      const wait: Wait = kind.plural === 'sources' || flags.force ? 'code' : 'answer';
      await apiFor(flags)
        .call('DELETE', `${kind.itemPath!(id)}${flags.force ? '?force=true' : ''}`, undefined, wait)
        .catch((error: unknown) => {
          // The server's message says "delete with force=true", a query parameter: the command's way is its flag.
          if (!(error instanceof ApiError) || error.status !== 409 || flags.force) throw error;
          throw new ApiError(
            error.status,
            error.code,
            error.message,
            error.details,
            `tributary delete ${id} --force deactivates what uses it, then deletes it`,
          );
        });
      out(`deleted ${id}`);
    });

  serverOptions(program.command('run <id>'))
    .description('run a source or workflow now, with an event')
    .option('--event <json>', 'the event: any JSON value, as the API takes it', '{}')
    .action(async (id: string, flags: ServerFlags & { event: string }) => {
      let event: unknown;
      try {
        event = JSON.parse(flags.event);
      } catch (error) {
        throw new UsageError(`--event must be JSON: ${(error as Error).message}`);
      }
      const kind = kindOfId(id);
      if (kind.plural !== 'sources' && kind.plural !== 'workflows') throw new UsageError(`run takes a source (dc_…) or workflow (p_…) id, not "${id}"`);
      const answer = await apiFor(flags)
        .call<{ data?: { id?: string } } | undefined>('POST', `${kind.itemPath!(id)}/run`, event)
        .catch((error: unknown) => {
          // The server's message names the API call that switches it on: the client has a command for it.
          if (!(error instanceof ApiError) || error.status !== 409) throw error;
          throw new ApiError(error.status, error.code, error.message, error.details, `tributary activate ${id} switches it on`);
        });
      out(`queued a run of ${id}${answer?.data?.id ? ` (${answer.data.id})` : ''}; see it with tributary events ${id} or tributary logs ${id}`);
      await noteNoWorkerNode(flags, 'the run stays queued');
    });

  for (const [name, active] of [
    ['activate', true],
    ['deactivate', false],
  ] as const) {
    serverOptions(program.command(`${name} <id>`))
      .description(
        `switch a source or workflow ${active ? 'on (a source runs its activate() hook)' : 'off: it runs nothing until switched on (a source runs its deactivate() hook)'}`,
      )
      .action(async (id: string, flags: ServerFlags) => {
        const kind = kindOfId(id);
        if (kind.plural !== 'sources' && kind.plural !== 'workflows') throw new UsageError(`${name} takes a source (dc_…) or workflow (p_…) id, not "${id}"`);
        // A source's switch runs its hooks (code); a workflow's PUT keeps every field it is not given.
        const source = kind.plural === 'sources';
        await apiFor(flags).call(source ? 'PATCH' : 'PUT', kind.itemPath!(id), { active }, source ? 'code' : 'answer');
        out(`${name}d ${id}`);
      });
  }

  for (const auto of [false, true]) {
    const what = auto ? 'every source and workflow created from now on (an auto-subscription)' : "an emitter's stream";
    const ids = auto ? '<listener_id>' : '<emitter_id> <listener_id>';
    const eventOption = ['--event <name>', 'the stream: default (when not given), $errors, $logs or a channel name'] as const;
    serverOptions(program.command(`${auto ? 'auto-' : ''}subscribe ${ids}`))
      .description(`deliver the events of ${what} to a source, workflow or webhook${auto ? '' : ' (the emitter may be dc_* or p_*: all of them)'}`)
      .option(...eventOption)
      .option('--json', "the subscription as JSON (the API's answer)")
      .action(async (...args: unknown[]) => {
        const { target, flags } = subscriptionArgs(auto, args);
        const made = await subscribe(apiFor(flags), target);
        if (flags.json) out(JSON.stringify(made));
        else
          out(
            `subscribed ${made.listener_id} to ${streamName(made.event_name)} of ${made.emitter_id ?? 'every source and workflow created from now on'} (${made.id})`,
          );
      });
    serverOptions(program.command(`${auto ? 'auto-' : ''}unsubscribe ${ids}`))
      .description(auto ? 'stop subscribing the listener to sources and workflows created from now on (subscriptions made stay)' : 'remove a subscription')
      .option(...eventOption)
      .option('--json', 'what was removed as JSON')
      .action(async (...args: unknown[]) => {
        const { target, flags } = subscriptionArgs(auto, args);
        const event = await unsubscribe(apiFor(flags), target);
        if (flags.json)
          out(JSON.stringify({ ...(target.emitter !== undefined && { emitter_id: target.emitter }), listener_id: target.listener, event_name: event }));
        else out(`unsubscribed ${target.listener} from ${streamName(event)} of ${target.emitter ?? 'sources and workflows created from now on'}`);
      });
  }

  for (const [name, stream, description] of [
    ['events', 'events', "a source's or workflow's recent events, then new ones live with -f"],
    ['logs', '$logs', "a source's console output (a workflow's: its runs' step logs), then new lines live with -f"],
  ] as const) {
    serverOptions(program.command(`${name} <id>`))
      .description(description)
      .addOption(new Option('-n, --limit <n>', 'how many recent items to show first (0 to 100)').default(10).argParser(count))
      .option('-f, --follow', 'keep showing new ones as they come (Ctrl-C to stop); reconnects and resumes')
      .option('--errors', 'the $errors stream instead')
      .option('--json', 'one JSON object per line (for jq)')
      .action(async (id: string, flags: ServerFlags & { limit: number; follow?: boolean; errors?: boolean }) => {
        // Only these have streams: a webhook or component id was asked of the sources and came back "source not found".
        const kind = kindOfId(id);
        if (kind.plural !== 'sources' && kind.plural !== 'workflows') throw new UsageError(`${name} takes a source (dc_…) or workflow (p_…) id, not "${id}"`);
        const chosen: Stream = flags.errors ? '$errors' : stream;
        // An api node with no worker alive queues every run: a follow would wait on nothing with no word why.
        const what = { events: 'events', $logs: 'log lines', $errors: 'errors' }[chosen];
        if (flags.follow) await noteNoWorkerNode(flags, `its runs stay queued, and no new ${what} come,`);
        await untilInterrupted((signal) =>
          showStream(apiFor(flags, signal), id, {
            stream: chosen,
            limit: flags.limit,
            follow: flags.follow === true,
            json: flags.json === true,
            print: out,
            notice: say,
            signal,
          }),
        );
      });
  }

  propOptions(serverOptions(program.command('dev <file>')), 'the source name (default: the file name with -dev, as orders-dev for orders.mjs)')
    .description('deploy a development source, follow its events and logs, and update it in place on every save')
    .option('--json', 'events, logs and errors as JSON lines')
    .option('--delete-on-exit', 'delete the source on Ctrl-C without asking')
    // Both given, the source was deleted: --keep was dropped without a word.
    .addOption(new Option('--keep', 'keep the source on Ctrl-C without asking').conflicts('deleteOnExit'))
    .action(async (file: string, flags: ServerFlags & DeployFlags & { deleteOnExit?: boolean; keep?: boolean }) => {
      const api = apiFor(flags);
      const name = flags.name ?? `${path.basename(file).replace(/\.[^.]+$/, '')}-dev`;
      const live = () => noteNoWorkerNode(flags, "the source's runs stay queued, and no events, logs or errors come,");
      const source = await untilInterrupted((signal) =>
        withAsk(
          flags.interactive,
          (asking) => runDev(api, path.resolve(file), { ...deployOptions(flags), ...asking, name, json: flags.json === true, print: out, signal, live }),
          signal,
        ),
      );
      if (!source) return;
      let remove = flags.deleteOnExit === true;
      if (!remove && !flags.keep && isInteractive()) remove = await askToDelete(source.id);
      if (!remove) say(`kept ${source.id}; delete it with tributary delete ${source.id}`);
      else if (await deleteIfThere(api, `/v1/sources/${source.id}`)) say(`deleted ${source.id}`);
      // Deleted meanwhile (tributary delete, the console): the cleanup is done, not a failure with a 404 and exit 3.
      else say(`${source.id} was already deleted`);
    });

  addDataStoreCommands(program);
}

/** A (auto-)subscribe command's ids and flags, as commander passes them. */
function subscriptionArgs(auto: boolean, args: unknown[]): { target: SubscriptionTarget; flags: ServerFlags & { event?: string } } {
  const [emitter, listener] = (auto ? [undefined, args[0]] : args.slice(0, 2)) as [string | undefined, string];
  const flags = args[auto ? 1 : 2] as ServerFlags & { event?: string };
  return { target: { emitter, listener, event: flags.event ?? '' }, flags };
}

/** "sources (default), workflows, … or accounts": every kind `list` takes, the first its default. */
function listedKinds(): string {
  const [first, ...others] = KINDS.map((kind) => kind.plural);
  return `${first} (default), ${others.slice(0, -1).join(', ')} or ${others.at(-1)}`;
}

/** Deletes what `path` names; false when it is gone already (404), any other failure thrown on. */
async function deleteIfThere(api: ApiClient, path: string): Promise<boolean> {
  try {
    // The delete runs the source's deactivate() hook.
    await api.call('DELETE', path, undefined, 'code');
    return true;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return false;
    throw error;
  }
}

/** `dev`'s last question; a Ctrl-C instead of an answer takes the default (keep), as Enter would. */
async function askToDelete(sourceId: string): Promise<boolean> {
  const terminal = terminalAsk();
  try {
    const answer = await untilInterrupted(
      (signal) =>
        new Promise<string>((resolve, reject) => {
          signal.addEventListener(
            'abort',
            () => {
              process.stderr.write('\n');
              resolve('');
            },
            { once: true },
          );
          terminal.ask(`\ndelete the development source ${sourceId}? [y/N] `).then(resolve, reject);
        }),
    );
    return /^y(es)?$/i.test((answer ?? '').trim());
  } finally {
    terminal.close();
  }
}

interface DeployFlags {
  name?: string;
  prop: string[];
  propsFile?: string;
  interactive?: boolean;
}

function deployOptions(flags: DeployFlags): DeployOptions {
  return { name: flags.name, props: flags.prop, propsFile: flags.propsFile, progress: say };
}

function count(raw: string): number {
  // One page of the API: past it the server would refuse the request's limit, a parameter the user never wrote.
  if (!/^\d+$/.test(raw) || Number(raw) > 100) throw new UsageError(`-n takes a whole number from 0 to 100, not "${raw}"`);
  return Number(raw);
}

function printSource(what: string, source: Parameters<typeof endpointUrl>[0] & { id: string; name: string }, json: boolean | undefined): void {
  if (json) {
    out(JSON.stringify(source));
    return;
  }
  out(`${what} ${source.id} "${source.name}"`);
  const endpoint = endpointUrl(source);
  if (endpoint) out(`endpoint: ${endpoint}`);
}
