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
});
