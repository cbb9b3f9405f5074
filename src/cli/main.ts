// The `tributary` command: `serve` runs the service; `users` manages accounts on the configured database; the client
// commands (client-commands.ts) talk to any running server over its REST API.
import { Command, CommanderError, Option } from 'commander';
import { resolveConfig, settingOptions, SETTINGS, ConfigError, type Config } from '../config.js';
import type { Account, NewAccount, Plan, UserService } from '../services/users.js';
import { type Columns, formatTable, when } from '../client/resources.js';
import type { Store } from '../store/database.js';
import { ServiceError } from '../model/errors.js';
import { DataDirInUseError } from '../store/data-dir-lock.js';
import { refuseDuringRestore } from '../store/interrupted-restore.js';
import { systemClock } from '../lib/clock.js';
import { tributaryVersion } from '../lib/version.js';
import { addClientCommands } from './client-commands.js';
import { addOpsCommands, refuseMissingDatabase } from './ops-commands.js';
import { OpsError } from '../ops/ops-error.js';
import { NewerDatabaseError } from '../store/newer-database-error.js';
import { describeFailure, EXIT } from './terminal.js';
import { DatabaseLockedError, sayingWhoseLock } from './locked-database.js';
import { sayPgSslModeWarningOnOneLine } from './pg-ssl-mode-warning.js';

/** `users list`'s table, as `tributary list` prints its kinds. */
const ACCOUNT_COLUMNS: Columns<Account> = [
  ['ID', (a) => a.id],
  ['USERNAME', (a) => a.username],
  ['EMAIL', (a) => a.email],
  ['PLAN', (a) => a.plan],
  ['CREATED', (a) => when(a.createdAt)],
];

/** Settings the `users` commands need: where the database is. */
const STORAGE_FLAGS = new Set(['--data-dir', '--database-url']);

function configFrom(options: Record<string, unknown>): Config {
  const values: Record<string, unknown> = {};
  // An empty value whose parser means "unset" reaches here as '' (commander's stand-in): resolveConfig drops it.
  for (const s of SETTINGS) if (options[s.key] !== undefined) values[s.key] = options[s.key];
  return resolveConfig(values as Partial<Config>);
}

/**
 * The server's modules load only for the commands that use them, so that client commands start fast. Only `create`
 * may start a database in a fresh data directory (a first account before the first start); the others read accounts,
 * so a data directory without a database is a mistyped --data-dir.
 */
async function withUsers<T>(
  options: Record<string, unknown>,
  database: 'create' | 'existing',
  work: (users: UserService, store: Store) => Promise<T>,
): Promise<T> {
  const config = configFrom(options);
  if (database === 'existing') await refuseMissingDatabase(config, 'check-postgres');
  if (!config.databaseUrl) refuseDuringRestore(config.dataDir);
  const [{ openStore }, { UserService }] = await Promise.all([import('../store/database.js'), import('../services/users.js')]);
  return sayingWhoseLock(config, async () => {
    const store = await openStore({ dataDir: config.dataDir, databaseUrl: config.databaseUrl });
    try {
      return await work(new UserService(store, config, systemClock), store);
    } finally {
      await store.close();
    }
  });
}

/**
 * Refuses --metrics-port on the address --port listens at (a worker listens at none): the second listener would fail
 * with "another process is using it", when the process is this one.
 */
function refuseSharedPort(config: Config): void {
  const wildcard = (host: string) => host === '0.0.0.0' || host === '::';
  if (config.role === 'worker' || !config.metricsPort || config.metricsPort !== config.port) return;
  if (config.host !== config.metricsHost && !wildcard(config.host) && !wildcard(config.metricsHost)) return;
  throw new ConfigError(`--metrics-port and --port are both ${config.port}: the metrics listener needs a port of its own (0 picks a free one)`);
}

/**
 * Refuses --port on a worker node: it listens on no port, so a port given there is a probe or a load balancer's
 * target that would find nothing, said at start rather than found out later.
 */
function refuseWorkerPort(config: Config, portGiven: boolean): void {
  if (config.role !== 'worker' || !portGiven) return;
  throw new ConfigError(
    `--port (TRIBUTARY_PORT) ${config.port} on a worker node: --role worker listens on no port (its /healthz and /readyz are on --metrics-port; --public-url sets its endpoint URLs)`,
  );
}

/**
 * Refuses --host on a worker node, as --port: it listens on no interface, and its metrics listener binds to
 * --metrics-host; a host given there would only make the default public URL (its endpoint URLs) name an address at
 * which nothing answers.
 */
function refuseWorkerHost(config: Config, hostGiven: boolean): void {
  if (config.role !== 'worker' || !hostGiven) return;
  throw new ConfigError(
    `--host (TRIBUTARY_HOST) ${config.host} on a worker node: --role worker listens on no interface (its metrics listener binds to --metrics-host; --public-url sets its endpoint URLs)`,
  );
}

function accountLines(account: NewAccount): string[] {
  return [`account ${account.username} (${account.id}, ${account.plan} plan)`, `API key (shown once, store it now): ${account.apiKey}`];
}

function printAccount(account: NewAccount, json: boolean): void {
  const { id, username, email, plan, apiKey } = account;
  console.log(json ? JSON.stringify({ id, username, email, plan, api_key: apiKey }) : accountLines(account).join('\n'));
}

function storageOptions(): Option[] {
  return settingOptions().filter((o) => STORAGE_FLAGS.has(o.long ?? ''));
}

export function buildProgram(): Command {
  const program = new Command('tributary')
    .description('Self-hosted event sources with a Pipedream-compatible REST API')
    .version(tributaryVersion(), '-V, --version', 'print the version of this build')
    .showHelpAfterError()
    .configureOutput({ outputError: (message, write) => write(message) })
    // Commander would exit 1 on a bad flag itself; thrown instead, main exits 2 like any other bad input.
    .exitOverride();

  const serve = program.command('serve').description('start the service (SQLite in the data directory unless --database-url is set)');
  for (const option of settingOptions()) serve.addOption(option);
  serve.action(async (options: Record<string, unknown>) => {
    const config = configFrom(options);
    refuseSharedPort(config);
    refuseWorkerPort(config, options.port !== undefined);
    refuseWorkerHost(config, options.host !== undefined);
    const [{ createLogger, startTributary }, { tuneGarbageCollection }] = await Promise.all([import('../app.js'), import('../startup/gc-tuning.js')]);
    tuneGarbageCollection();
    const pretty = config.logFormat === 'pretty' || (config.logFormat === 'auto' && process.stdout.isTTY === true);
    const logger = createLogger(config, pretty ? (await import('./pretty-log.js')).prettyDestination() : undefined);
    // A worker node serves no API: the key it printed would land in the log no one reads for it, and its `Try:` line
    // would name an address it does not listen at. The first node serving the API makes the account instead.
    const createInitialAccount = config.role !== 'worker';
    const running = await sayingWhoseLock(config, () =>
      startTributary(config, { logger, publicUrlGiven: options.publicUrl !== undefined, createInitialAccount }),
    );
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) {
        // A second signal: no more waiting. What was acknowledged is committed already; running work is re-run later.
        logger.warn({ signal }, 'second signal: exiting now; work still running stays queued');
        process.exit(1);
      }
      stopping = true;
      // A worker node takes no requests: it stops claiming work and finishes what it runs.
      const what = config.role === 'worker' ? 'no new work claimed' : 'no new requests';
      logger.info({ signal }, `shutting down: ${what}, finishing in-flight work`);
      running.close().then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
    // One write, so that whoever reads standard output sees the whole banner at once; and only once the signals
    // are handled, since whoever reads it may stop the server straight away.
    // Where this process listens (the port --port 0 picked), and, when --public-url names another address, that one.
    const { host, port } = running.config;
    const listening = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
    const publicUrl = running.url === listening ? '' : `public URL ${running.url}, `;
    const banner = [
      config.role === 'worker'
        ? 'Tributary worker node is running (role worker: no HTTP; it claims invocations, workflow runs, timers and deliveries)'
        : `Tributary is listening at ${listening} (${publicUrl}API base ${running.url}/v1, docs ${running.url}/docs${config.role === 'api' ? '; role api: work is run by worker nodes' : ''})`,
      `storage: ${running.services.store.location}`,
      ...(running.metricsUrl ? [`metrics: ${running.metricsUrl}`] : []),
    ];
    if (running.initialAccount) {
      banner.push('The database was empty, so an account was created:', ...accountLines(running.initialAccount));
      banner.push(`Try: curl -H "Authorization: Bearer ${running.initialAccount.apiKey}" ${running.url}/v1/users/me`);
    }
    console.log(banner.join('\n'));
  });

  const users = program.command('users').description('manage accounts (works while the server runs)');
  const create = users
    .command('create')
    .description('create an account and print its API key once')
    .requiredOption('--username <username>', 'unique user name')
    .requiredOption('--email <email>', 'email address')
    .addOption(new Option('--plan <plan>', 'plan').choices(['free', 'paid']).default('free'))
    .option('--json', 'print {"id","username","email","plan","api_key"} on one line');
  for (const option of storageOptions()) create.addOption(option);
  create.action(async (options: Record<string, unknown>) => {
    const account = await withUsers(options, 'create', (service) =>
      service.create({ username: String(options.username), email: String(options.email), plan: options.plan as Plan }),
    );
    printAccount(account, options.json === true);
  });

  const list = users.command('list').description('list accounts').option('--json', 'one JSON object per line');
  for (const option of storageOptions()) list.addOption(option);
  list.action(async (options: Record<string, unknown>) => {
    const accounts = await withUsers(options, 'existing', (service) => service.list());
    if (options.json) {
      for (const a of accounts) console.log(JSON.stringify({ id: a.id, username: a.username, email: a.email, plan: a.plan, created_at: a.createdAt }));
    } else if (accounts.length === 0) {
      // On standard error, as `tributary list` says it: standard output holds only the table.
      console.error('no accounts');
    } else console.log(formatTable({ columns: ACCOUNT_COLUMNS }, accounts));
  });

  const rotate = users
    .command('rotate-key <idOrUsername>')
    .description("replace an account's API key; the old key stops working at once")
    .option('--json', 'print the account and new key as JSON');
  for (const option of storageOptions()) rotate.addOption(option);
  rotate.action(async (idOrUsername: string, options: Record<string, unknown>) => {
    const account = await withUsers(options, 'existing', async (service, store) => {
      const rotated = await service.rotateKey(idOrUsername);
      // The running nodes of a cluster end the live streams opened with the old key, as they do for the API's rotation.
      const { signalCluster } = await import('../delivery/cluster-signals.js');
      await signalCluster(store, 'accounts', [rotated.id]);
      return rotated;
    });
    printAccount(account, options.json === true);
  });

  addOpsCommands(program);
  addClientCommands(program);

  return program;
}

export async function main(argv: string[]): Promise<void> {
  sayPgSslModeWarningOnOneLine();
  try {
    await buildProgram().parseAsync(argv);
  } catch (error) {
    // Help and version end with 0; an unknown flag, a bad value or a missing argument (already printed) with 2.
    if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? EXIT.ok : EXIT.usage);
    if (error instanceof ConfigError || error instanceof ServiceError || error instanceof DataDirInUseError || error instanceof OpsError) {
      console.error(`error: ${error.message}`);
      process.exit(EXIT.usage);
    }
    if (error instanceof NewerDatabaseError || error instanceof DatabaseLockedError) {
      console.error(`error: ${error.message}`);
      process.exit(EXIT.failed);
    }
    const failure = describeFailure(error);
    if (failure) {
      for (const line of failure.lines) console.error(line);
      process.exit(failure.code);
    }
    // Anything else (a database that cannot be opened, a copy that does not match) is said as every other error is;
    // TRIBUTARY_DEBUG=1 adds the stack, for what is a bug rather than a condition.
    console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
    if (process.env.TRIBUTARY_DEBUG && error instanceof Error && error.stack) console.error(error.stack);
    process.exit(EXIT.failed);
  }
}
