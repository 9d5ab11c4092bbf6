import { randomUUID } from 'node:crypto';
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
});
