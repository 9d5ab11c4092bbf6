import { randomUUID } from 'node:crypto';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { createPool, type Pool } from '@dnc/kit';
import { quotav1 } from '@dnc/proto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Ledger } from '../src/store/ledger.js';
import { startTestQuota, type TestQuota } from './support.js';

// Found by a review (2026-12-03): the month of a reservation came from the quota process's clock, the time
// of its usage record from PostgreSQL's. A replica whose clock is a few seconds off at 00:00 UTC on the 1st
// charged a request to the other month than its usage record says (and the month figures read another
// account than the one charged). The month is now the database's, as every recorded time is.
let t: TestQuota;
let pool: Pool;

beforeAll(async () => {
  t = await startTestQuota('quota_period_clock');
  pool = createPool(t.databaseUrl);
});

afterEach(() => {
  vi.useRealTimers();
});

afterAll(async () => {
  await pool?.end();
  await t?.stop();
});

const databaseMonth = async () =>
  (await pool.query<{ p: string }>(`SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM') AS p`)).rows[0]!.p;

describe('the quota month is the database clock’s, whatever the process clock says', () => {
  it('a reservation and the month figures go to the database’s month when this process’s clock is 40 days ahead', async () => {
    const ledger = new Ledger(pool);
    const org = randomUUID();
    await ledger.setLimit(org, 'mx', 100);
    const month = await databaseMonth();
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 40 * 86_400_000 });
    const reservationId = randomUUID();
    expect(
      await ledger.reserveMany([
        { reservationId, orgId: org, country: 'mx', amount: 30, kind: quotav1.UsageKind.SYNC },
      ]),
    ).toEqual(['ok']);
    const row = await pool.query('SELECT period FROM quota.reservations WHERE reservation_id = $1', [
      reservationId,
    ]);
    expect(row.rows[0].period).toBe(month);
    expect(await ledger.accounts(org)).toEqual([
      { orgId: org, country: 'mx', period: month, limit: 100, used: 0, reserved: 30 },
    ]);
    expect(await ledger.commitMany([reservationId])).toEqual(['committed']);
    expect((await ledger.accounts(org))[0]).toMatchObject({ period: month, used: 30, reserved: 0 });
  });

  it('a usage record says the month it counts against, not only when it was committed', async () => {
    // A v2 job reserved on the last day of a month and committed on the next (jobs run up to 24 h), or
    // a request straddling 00:00 UTC on the 1st: the month figures count it in its reservation's month,
    // the record's time is the commit's. ListUsage gave only the time, so a bill built from it charged
    // the record to the other month than the limit it was counted against (review of 2026-12-03).
    const org = randomUUID();
    await t.admin.setLimit({ orgId: org, country: 'mx', limit: 100n });
    const previous = (
      await pool.query<{ p: string }>(
        `SELECT to_char((now() - interval '1 month') AT TIME ZONE 'UTC', 'YYYY-MM') AS p`,
      )
    ).rows[0]!.p;
    const reservationId = randomUUID();
    // Reserved in the previous month, as the ledger's function does at that month's end.
    await pool.query(
      `SELECT quota.reserve_many(ARRAY[$1], ARRAY[$2], ARRAY['mx'], ARRAY[7]::bigint[], ARRAY[$3]::smallint[], $4)`,
      [reservationId, org, quotav1.UsageKind.JOB, previous],
    );
    await t.client.commit({ reservationId });
    const { records } = await t.admin.listUsage({ orgId: org });
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ reservationId, count: 7n, period: previous });
    expect(timestampDate(records[0]!.time!).toISOString().slice(0, 7)).toBe(await databaseMonth());
    // This month's figures never counted it.
    expect(await t.account(org, 'mx')).toMatchObject({ used: 0, reserved: 0 });
  });
});
