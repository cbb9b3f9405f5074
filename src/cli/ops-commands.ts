// The operations commands: backup and restore (SQLite), migrate (--status), migrate-store (SQLite → PostgreSQL).
// Their modules load inside the actions, so that other commands start fast.
import os from 'node:os';
import path from 'node:path';
import type { Command, Option } from 'commander';
import { resolveConfig, settingOptions } from '../config.js';
import { counted } from '../client/resources.js';
import { OpsError, OpsInterruptedError } from '../ops/ops-error.js';
import { refuseDuringRestore } from '../store/interrupted-restore.js';

function storageOption(flag: '--data-dir' | '--database-url'): Option {
  const option = settingOptions().find((o) => o.long === flag);
  if (!option) throw new Error(`no setting ${flag}`);
  return option;
}

/** Where the database is, from --data-dir / --database-url and their variables, with the same defaults as serve. */
function storage(options: Record<string, unknown>): { dataDir: string; databaseUrl: string | undefined } {
  const config = resolveConfig({ dataDir: options.dataDir as string | undefined, databaseUrl: options.databaseUrl as string | undefined });
  return { dataDir: config.dataDir, databaseUrl: config.databaseUrl };
}

/**
 * Refuses a data directory without a database, for the commands that only read or change what is there: opening it
 * would create an empty database, and a mistyped --data-dir would look like a Tributary with nothing in it. With
 * `postgres`, a PostgreSQL database without Tributary's migrations is refused too: opening it would create every table
 * in it (in `postgres`, say, for a mistyped database name).
 */
export async function refuseMissingDatabase(
  where: { dataDir: string; databaseUrl: string | undefined },
  postgres: 'check-postgres' | 'any-postgres' = 'any-postgres',
): Promise<void> {
  if (where.databaseUrl) {
    if (postgres === 'any-postgres') return;
    const { migrationStatus } = await import('../ops/migration-status.js');
    const status = await migrationStatus(where);
    if (status.applied.length === 0) throw new OpsError(`no Tributary database at ${status.location}: it holds no Tributary tables; check --database-url`);
    return;
  }
  const fs = await import('node:fs');
  const file = path.join(path.resolve(where.dataDir), 'tributary.db');
  if (!fs.existsSync(file)) throw new OpsError(`no Tributary database at ${file}: check --data-dir (or pass --database-url)`);
}

/** Progress goes to a terminal only, on one line rewritten in place; logs and pipes get the final line alone. */
function progressLine(label: string): { update(done: number, total: number): void; end(): void } {
  const tty = process.stderr.isTTY === true;
  let shown = false;
  return {
    update(done, total) {
      if (!tty) return;
      const percent = total === 0 ? 100 : Math.floor((done / total) * 100);
      process.stderr.write(`\r${label}: ${percent}% (${done}/${total})\u001b[K`);
      shown = true;
    },
    end() {
      if (shown) process.stderr.write('\n');
      shown = false;
    },
  };
}

/**
 * Runs `work` with a signal that Ctrl-C or SIGTERM aborts, so that it stops between two steps and removes what it
 * wrote rather than being killed mid-write. Work so stopped ends the command as that signal would have: 130, 143.
 */
async function stoppable<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let stoppedBy: NodeJS.Signals | undefined;
  const stop = (signal: NodeJS.Signals) => {
    stoppedBy = signal;
    controller.abort();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    return await work(controller.signal);
  } catch (error) {
    if (!(error instanceof OpsInterruptedError) || !stoppedBy) throw error;
    console.error(`error: ${error.message} (stopped by ${stoppedBy})`);
    process.exit(128 + os.constants.signals[stoppedBy]);
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

export function addOpsCommands(program: Command): void {
  const backup = program
    .command('backup')
    .description('copy the SQLite database to a file while the server runs (PostgreSQL: use pg_dump)')
    .requiredOption('--out <file>', 'file to write the backup to')
    .option('--force', 'replace --out if it exists')
    .addOption(storageOption('--data-dir'))
    .addOption(storageOption('--database-url'));
  backup.action(async (options: Record<string, unknown>) => {
    const where = storage(options);
    if (where.databaseUrl) {
      throw new OpsError(
        'backup copies the SQLite database of a data directory; for PostgreSQL use pg_dump (pg_dump -Fc -f tributary.dump "$TRIBUTARY_DATABASE_URL"), see Operating Tributary in the README',
      );
    }
    const { backupDatabase } = await import('../ops/backup.js');
    const progress = progressLine('backup');
    const result = await stoppable((signal) =>
      backupDatabase({
        dataDir: where.dataDir,
        out: String(options.out),
        force: options.force === true,
        onProgress: (p) => progress.update(p.totalPages - p.remainingPages, p.totalPages),
        signal,
      }).finally(() => progress.end()),
    );
    console.log(
      `backup written to ${result.file} (${counted(result.bytes, 'byte')}, ${counted(result.pages, 'page')}${result.restarts > 0 ? `, started over ${counted(result.restarts, 'time')} as the server wrote` : ''}); ` +
        'the secret key is not in it: keep secret.key (or your --secret-key) separately',
    );
  });

  const restore = program
    .command('restore')
    .description('put a backup in place as the database of a data directory (the server must be stopped)')
    .requiredOption('--from <file>', 'backup file written by tributary backup')
    .option('--force', 'replace the database the data directory already holds')
    .addOption(storageOption('--data-dir'))
    .addOption(storageOption('--database-url'));
  restore.action(async (options: Record<string, unknown>) => {
    // Nodes given a PostgreSQL database (TRIBUTARY_DATABASE_URL exported, as for a cluster) never read the data
    // directory's SQLite file: a restore there would report success and change nothing they serve.
    if (storage(options).databaseUrl) {
      throw new OpsError(
        'restore puts a SQLite backup in place in a data directory, but --database-url (TRIBUTARY_DATABASE_URL) names a PostgreSQL database, which it would not change: restore that with pg_restore, or restore the SQLite backup without --database-url and copy it with migrate-store; see Operating Tributary in the README',
      );
    }
    const { restoreDatabase } = await import('../ops/restore.js');
    const progress = progressLine('restore');
    const result = await stoppable((signal) =>
      restoreDatabase({
        from: String(options.from),
        dataDir: storage(options).dataDir,
        force: options.force === true,
        signal,
        onProgress: (p) => progress.update(p.totalPages - p.remainingPages, p.totalPages),
      }).finally(() => progress.end()),
    );
    if (result.removedLeftovers.length > 0) console.log(`removed what a killed restore had left: ${result.removedLeftovers.join(', ')}`);
    console.log(`restored ${result.file} (${result.migrations} migrations applied in the backup)`);
    if (result.keptAside) {
      console.log(
        `the database it replaced could not be checkpointed (it is damaged, or another process has it open), so its log was not folded into it: it is kept, with its log, as ${result.keptAside}; delete those files once you no longer need them`,
      );
    }
    if (!result.keyFilePresent) {
      console.log(
        'the data directory has no secret.key: put the key file you kept there, or start the server with the --secret-key or --secret-key-file it used; ' +
          'without it, sealed secrets (secret props, connected accounts, webhook secrets) cannot be opened',
      );
    }
  });

  const migrate = program
    .command('migrate')
    .description('apply pending database migrations, or list them with --status')
    .option('--status', 'list applied and pending migrations; change nothing')
    .option('--json', 'with --status: one JSON object')
    .addOption(storageOption('--data-dir'))
    .addOption(storageOption('--database-url'));
  migrate.action(async (options: Record<string, unknown>) => {
    const where = storage(options);
    // Listing creates nothing: a data directory without a database is a mistake in --data-dir. Migrating creates it, as serve does.
    if (options.status === true) await refuseMissingDatabase(where);
    if (options.json === true && options.status !== true) throw new OpsError('--json goes with --status');
    const { migrationStatus, formatMigrationStatus } = await import('../ops/migration-status.js');
    if (options.status !== true) {
      if (!where.databaseUrl) refuseDuringRestore(where.dataDir);
      const { openStore } = await import('../store/database.js');
      const before = await migrationStatus(where);
      const store = await openStore(where);
      await store.close();
      console.log(`applied ${counted(before.pending.length, 'migration')}${before.pending.length > 0 ? `: ${before.pending.join(', ')}` : ''}`);
      return;
    }
    const status = await migrationStatus(where);
    if (options.json === true) console.log(JSON.stringify(status));
    else console.log(formatMigrationStatus(status).join('\n'));
  });

  const migrateStore = program
    .command('migrate-store')
    .description("copy a stopped data directory's SQLite database into PostgreSQL, verified table by table; run again to resume")
    .requiredOption('--to <url>', 'postgres:// URL of the target database')
    .option('--force', 'empty a target that already holds Tributary data first')
    .option('--batch-size <rows>', 'rows per batch (default: 1000)')
    .addOption(storageOption('--data-dir'));
  migrateStore.action(async (options: Record<string, unknown>) => {
    const to = String(options.to);
    if (!/^postgres(ql)?:\/\//.test(to)) throw new OpsError(`--to: expected a postgres:// URL, got "${to}"`);
    // No commander default: it would show as "1000", quoted like text, in --help.
    const batchSize = options.batchSize === undefined ? 1000 : Number(options.batchSize);
    if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000)
      throw new OpsError(`--batch-size: expected an integer from 1 to 10000, got "${String(options.batchSize)}"`);
    const { dataDir } = storage(options);
    const { migrateStore: run } = await import('../ops/migrate-store.js');
    let progress: ReturnType<typeof progressLine> | undefined;
    let current = '';
    const reports = await stoppable((signal) =>
      run({
        signal,
        dataDir,
        to,
        force: options.force === true,
        batchSize,
        onProgress: (table, copied, total) => {
          if (table !== current) {
            progress?.end();
            progress = progressLine(`copying ${table}`);
            current = table;
          }
          progress!.update(copied, total);
        },
        onChanged: (table) => {
          console.log(`${table} changed in ${dataDir} since the interrupted run: it and the tables after it are copied again`);
        },
        onTable: (report) => {
          progress?.end();
          progress = undefined;
          current = '';
          console.log(
            `${report.table}: ${counted(report.rows, 'row')}, checksum ${report.checksum.slice(0, 16)}… ${report.resumed ? 'verified by an earlier run' : 'copied and verified'}`,
          );
        },
      }).finally(() => progress?.end()),
    );
    const rows = reports.reduce((sum, r) => sum + r.rows, 0);
    const keyFile = path.join(dataDir, 'secret.key');
    console.log(`moved ${counted(reports.length, 'table')}, ${counted(rows, 'row')}, to ${to.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@')}`);
    const key = (await import('node:fs')).existsSync(keyFile)
      ? `--secret-key-file ${keyFile} (or a copy of that file kept elsewhere)`
      : '--secret-key <the key> or --secret-key-file <its file>, whichever this data directory was served with (it has no secret.key)';
    console.log(
      `start the server on it with the same key and public URL, so that secrets open and endpoint URLs stay the same: tributary serve --database-url <that URL> ${key} --public-url <the same>`,
    );
  });
}
