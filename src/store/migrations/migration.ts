// The shape of one migration: written once for both dialects, told which one it runs on.
import type { Migration } from 'kysely';

export type DialectName = 'sqlite' | 'postgres';

/** A migration receives the dialect so that the rare dialect-specific type can be chosen in place. */
export type DialectMigration = (dialect: DialectName) => Migration;
