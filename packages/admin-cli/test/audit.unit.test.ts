import { describe, expect, it } from 'vitest';
import { timeFlag, UsageError } from '../src/cli.js';
import { newestEvents } from '../src/commands/audit.js';

// Found by a review of the operator tools (2026-12-05): `dnc-admin audit` read each service's log from
// its first row and stopped at --limit (1,000), so a service with more rows than that since --since
// (or ever) showed its oldest ones: yesterday's RevokeApiKey was simply absent, with no marker.
const log = (n: number) => Array.from({ length: n }, (_, i) => ({ id: BigInt(i + 1) }));

/** A service's ListAuditEvents over `rows`: ids ascending after `afterId`, at most `limit`. */
function service(rows: { id: bigint }[]) {
  const calls: bigint[] = [];
  const page = async (afterId: bigint, limit: number) => {
    calls.push(afterId);
    return rows.filter((r) => r.id > afterId).slice(0, limit);
  };
  return { page, calls };
}

describe('newestEvents', () => {
  it('keeps the newest `limit` of a log longer than a page and says what it left out', async () => {
    const s = service(log(2_500));
    const r = await newestEvents(s.page, 1_000, 1_000);
    expect(r.events.map((e) => Number(e.id))).toEqual(Array.from({ length: 1_000 }, (_, i) => 1_501 + i));
    expect(r.omitted).toBe(1_500);
    expect(s.calls).toEqual([0n, 1_000n, 2_000n]);
  });

  it('a log of exactly a page, and one shorter: all of it, nothing omitted', async () => {
    for (const n of [1_000, 999, 0]) {
      const r = await newestEvents(service(log(n)).page, 1_000, 1_000);
      expect(r.events).toHaveLength(n);
      expect(r.omitted).toBe(0);
    }
  });

  it('a limit one under the log: the oldest row is the one omitted', async () => {
    const r = await newestEvents(service(log(1_001)).page, 1_000, 1_000);
    expect(Number(r.events[0]!.id)).toBe(2);
    expect(r.omitted).toBe(1);
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
    for (const v of ['2026-12-01T06:00:00', '2026-12-01', 'yesterday', '2026-13-01T00:00:00Z', true])
      expect(() => timeFlag({ since: v }, 'since'), String(v)).toThrow(UsageError);
  });
});
