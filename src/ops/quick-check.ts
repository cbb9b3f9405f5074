// SQLite's quick_check said in one line: how backup, restore and migrate-store name the damage in a database file.
import type SQLite from 'better-sqlite3';

/**
 * Undefined when SQLite reads `db` whole; else the first finding and how many more, on one line (SQLite lists one
 * per row, under a header, and a page it cannot parse at all ends the check with an error: all that a file cut
 * short gives).
 */
export function damageOf(db: SQLite.Database): string | undefined {
  const rows: string[] = [];
  let failure: string | undefined;
  try {
    for (const row of db.prepare('pragma quick_check').pluck().iterate()) rows.push(String(row));
  } catch (error) {
    if (!/^SQLITE_(CORRUPT|NOTADB)/.test(String((error as { code?: unknown }).code))) throw error;
    failure = (error as Error).message;
  }
  if (failure === undefined && rows.length === 1 && rows[0] === 'ok') return undefined;
  const findings = rows.flatMap((row) => row.split('\n')).filter((line) => line !== '' && !/^\*\*\* in database .* \*\*\*$/.test(line));
  if (findings.length === 0) return `SQLite: ${failure ?? rows.join(' ')}`;
  return `SQLite's quick check: ${findings[0]}${findings.length > 1 ? `, and ${findings.length - 1} more` : ''}`;
}
