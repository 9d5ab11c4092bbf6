import { describe, expect, it } from 'vitest';
import { timeFlag, UsageError } from '../src/cli.js';
import { type AuditPage, newestEvents } from '../src/commands/audit.js';

// Found by a review of the operator tools (2026-12-05): `dnc-admin audit` read each service's log from
// its first row and stopped at --limit (1,000), so a service with more rows than that since --since
// (or ever) showed its oldest ones: yesterday's RevokeApiKey was simply absent, with no marker.
const log = (n: number) => Array.from({ length: n }, (_, i) => ({ id: BigInt(i + 1) }));

/**
 * A service's ListAuditEvents over `rows`: newest first below `beforeId` when asked and `newestFirst` is
 * served, else ascending after `afterId` (a server from before newest_first).
 */
function service(rows: { id: bigint }[], newestFirst = true) {
  const calls: string[] = [];
  const page: AuditPage<{ id: bigint }> = async (q, limit) => {
    if (newestFirst && q.newestFirst) {
      calls.push(`before ${q.beforeId}`);
      return rows
        .filter((r) => q.beforeId === 0n || r.id < q.beforeId)
        .reverse()
        .slice(0, limit);
    }
    calls.push(`after ${q.afterId}`);
    return rows.filter((r) => r.id > q.afterId).slice(0, limit);
  };
  return { page, calls };
}

const ids = (events: { id: bigint }[]) => events.map((e) => Number(e.id));
const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

describe('newestEvents', () => {
  it('reads the newest `limit` first, oldest to newest, and says older ones were left out', async () => {
    const s = service(log(2_500));
    const r = await newestEvents(s.page, 1_000, 1_000);
    expect(ids(r.events)).toEqual(range(1_501, 1_000));
    expect(r.omitted).toBe(true);
    // Two pages from the newest (1,000 and the one more), not the whole log.
    expect(s.calls).toEqual(['before 0', 'before 1501']);
  });

  it('a log of exactly `limit`, and shorter ones: all of it, nothing omitted', async () => {
    for (const n of [1_000, 999, 1, 0]) {
      const r = await newestEvents(service(log(n)).page, 1_000, 1_000);
      expect(ids(r.events)).toEqual(range(1, n));
      expect(r.omitted).toBe(false);
    }
  });

  it('one more than `limit`: the oldest row is the one omitted; small pages are followed', async () => {
    const r = await newestEvents(service(log(1_001)).page, 1_000, 1_000);
    expect(ids(r.events)).toEqual(range(2, 1_000));
    expect(r.omitted).toBe(true);
    const paged = service(log(25));
    const small = await newestEvents(paged.page, 10, 4);
    expect(ids(small.events)).toEqual(range(16, 10));
    expect(small.omitted).toBe(true);
  });

  it('a server from before newest_first (ascending pages): its whole log is read, the newest kept', async () => {
    const s = service(log(2_500), false);
    const r = await newestEvents(s.page, 1_000, 1_000);
    expect(ids(r.events)).toEqual(range(1_501, 1_000));
    expect(r.omitted).toBe(true);
    expect(s.calls).toEqual(['after 0', 'after 1000', 'after 2000']);
    for (const n of [1_000, 999, 0]) {
      const whole = await newestEvents(service(log(n), false).page, 1_000, 1_000);
      expect(ids(whole.events)).toEqual(range(1, n));
      expect(whole.omitted).toBe(false);
    }
  });
});

// The same review: `--since` (and `country maintenance --until`) without a zone was read in the
// operator's local time; `registry load --as-of` already refused it.
describe('timeFlag', () => {
  it('takes an ISO 8601 time with its zone, refuses one without', () => {
    expect(timeFlag({ since: '2026-12-01T06:00:00Z' }, 'since')?.toISOString()).toBe(
      '2026-12-01T06:00:00.000Z',
    );
    expect(timeFlag({ since: '2026-12-01T00:00:00-06:00' }, 'since')?.toISOString()).toBe(
      '2026-12-01T06:00:00.000Z',
    );
    expect(timeFlag({}, 'since')).toBeUndefined();
    expect(timeFlag({ since: '2028-02-29T23:59:59.5+01:00' }, 'since')?.toISOString()).toBe(
      '2028-02-29T22:59:59.500Z',
    );
    for (const v of [
      '2026-12-01T06:00:00',
      '2026-12-01',
      'yesterday',
      '2026-13-01T00:00:00Z',
      '2026-02-30T00:00:00Z',
      '2026-02-29T00:00:00Z',
      '2026-12-01T24:00:00Z',
      '2026-12-01T06:60:00Z',
      true,
    ])
      expect(() => timeFlag({ since: v }, 'since'), String(v)).toThrow(UsageError);
  });
});
