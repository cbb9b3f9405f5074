// The background outage log: one line when an outage begins, one when it ends, whatever is retried between; a full
// disk (reads still work) ends only with a write.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { DatabaseOutageLog } from '../../src/store/outage-log.js';

function collected() {
  const lines: Array<{ level: number; msg: string; failures?: number }> = [];
  const log = new DatabaseOutageLog(pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }));
  return { log, lines };
}

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
const diskFull = () => Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });

describe('DatabaseOutageLog', () => {
  it('says an outage once, however often it is met, and its end once', () => {
    const { log, lines } = collected();
    log.reached('read');
    for (let i = 0; i < 50; i++) expect(log.absorb(refused())).toBe(true);
    log.reached('read');
    log.reached('written');
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [50, 'the database is unreachable: runs, timers and deliveries wait, and go on by themselves once it is back'],
      [40, 'the database is back: runs, timers and deliveries go on'],
    ]);
    expect(lines[1]!.failures).toBe(50);
  });

  it('leaves any other error to its caller', () => {
    const { log, lines } = collected();
    expect(log.absorb(new Error('syntax error at or near "selec"'))).toBe(false);
    expect(log.absorb(undefined)).toBe(false);
    expect(lines).toEqual([]);
  });

  it('ends a full disk only when a write goes through, not at every read in between', () => {
    const { log, lines } = collected();
    expect(log.absorb(diskFull())).toBe(true);
    log.reached('read');
    expect(log.absorb(diskFull())).toBe(true);
    log.reached('read');
    expect(lines.map((l) => l.msg)).toEqual(["the data directory's disk is full: runs, timers and deliveries wait, and go on by themselves once it is back"]);
    log.reached('written');
    expect(lines.map((l) => l.msg).at(-1)).toBe("the data directory's disk has room again: runs, timers and deliveries go on");
    expect(lines).toHaveLength(2);
  });

  it("ends SQLite's write lock held elsewhere, or a write the file system refuses, only when a write goes through", () => {
    for (const code of ['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_IOERR_WRITE', 'SQLITE_IOERR_FSYNC']) {
      const { log, lines } = collected();
      const refusedWrite = () => Object.assign(new Error('database is locked'), { code });
      // A loop that reads its queue, then fails to commit, every second: it said "back" and "unreachable" each time.
      for (let i = 0; i < 3; i++) {
        expect(log.absorb(refusedWrite())).toBe(true);
        log.reached('read');
      }
      log.reached('written');
      expect({ code, lines: lines.map((l) => [l.level, l.msg, l.failures]) }).toEqual({
        code,
        lines: [
          [50, 'the database is unreachable: runs, timers and deliveries wait, and go on by themselves once it is back', undefined],
          [40, 'the database is back: runs, timers and deliveries go on', 3],
        ],
      });
    }
  });

  it('ends an outage that stops reads too (a failed read, PostgreSQL down) at the first read that goes through', () => {
    for (const code of ['SQLITE_IOERR_READ', 'SQLITE_IOERR', 'ECONNREFUSED']) {
      const { log, lines } = collected();
      expect(log.absorb(Object.assign(new Error('disk I/O error'), { code }))).toBe(true);
      log.reached('read');
      expect({ code, msgs: lines.map((l) => l.msg) }).toEqual({
        code,
        msgs: [
          'the database is unreachable: runs, timers and deliveries wait, and go on by themselves once it is back',
          'the database is back: runs, timers and deliveries go on',
        ],
      });
    }
  });

  it('ends an outage that only writes end at the next read after any write the store took, whoever wrote', () => {
    const { log, lines } = collected();
    let writes = 7;
    log.countWritesWith(() => writes);
    expect(log.absorb(Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' }))).toBe(true);
    log.reached('read');
    expect(lines).toHaveLength(1);
    // A request's write committed (the lock is free): the loop's next read says the database is back.
    writes++;
    log.reached('read');
    expect(lines.map((l) => l.msg)).toEqual([
      'the database is unreachable: runs, timers and deliveries wait, and go on by themselves once it is back',
      'the database is back: runs, timers and deliveries go on',
    ]);
  });
});
