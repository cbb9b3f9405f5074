// Opens SQLite files with the better-sqlite3 build that suits the running Node.js.
import { createRequire } from 'node:module';
import type SQLite from 'better-sqlite3';

/**
 * better-sqlite3 12 wraps its objects with Node's own C++ wrapper, which on Node 24 aborts the process when the
 * garbage collector frees a statement; 13 is built on Node-API instead, but needs Node 22 or later (it crashes on
 * Node 20). Both are installed (13 under the alias `better-sqlite3-napi`, with prebuilt binaries) and the one that
 * works is loaded. Their JavaScript API is the same.
 */
export const SQLITE_DRIVER = Number(process.versions.node.split('.')[0]) >= 24 ? 'better-sqlite3-napi' : 'better-sqlite3';

const Driver = ((await import(SQLITE_DRIVER)) as { default: typeof SQLite }).default;

/** Where the driver's module lives, for a worker thread that opens its own connection. */
export const SQLITE_DRIVER_PATH = createRequire(import.meta.url).resolve(SQLITE_DRIVER);

export function openSqliteFile(file: string, options?: SQLite.Options): SQLite.Database {
  return new Driver(file, options);
}
