import { randomUUID } from 'node:crypto';
import { quotav1 } from '@dnc/proto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestQuota, type TestQuota } from './support.js';

const { UsageKind } = quotav1;

// Alerts DncSyncReservationStale / DncJobReservationStale read this gauge: it must report the oldest
// reservation still open per kind, and go back to 0 once it is settled.
describe('dnc_quota_oldest_open_reservation_seconds', () => {
  let t: TestQuota;
  let db: pg.Client;
  beforeAll(async () => {
    t = await startTestQuota('resage');
    db = new pg.Client({ connectionString: t.databaseUrl });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await t?.stop();
  });

  const ages = async () => {
    const text = await t.quota.service.metrics.metrics();
    const value = (kind: string) =>
      Number(
        new RegExp(
          `dnc_quota_oldest_open_reservation_seconds\\{[^}]*kind="${kind}"[^}]*\\} ([\\d.e+-]+)`,
        ).exec(text)?.[1],
      );
    return { sync: value('sync'), job: value('job') };
  };

  it('is 0 with nothing open, the age of the oldest open reservation per kind, and 0 again once settled', async () => {
    expect(await ages()).toEqual({ sync: 0, job: 0 });
    const org = randomUUID();
    await t.admin.setLimit({ orgId: org, country: 'co', limit: 100n });
    const sync = randomUUID();
    const job = randomUUID();
    await t.client.reserve({
      reservationId: sync,
      orgId: org,
      country: 'co',
      amount: 1n,
      kind: UsageKind.SYNC,
    });
    await t.client.reserve({
      reservationId: job,
      orgId: org,
      country: 'co',
      amount: 5n,
      kind: UsageKind.JOB,
    });
    // As if the callers had died: the sync one 11 minutes ago, the job one 25 hours ago.
    await db.query(
      `UPDATE quota.reservations SET created_at = now() - interval '11 minutes' WHERE reservation_id = $1`,
      [sync],
    );
    await db.query(
      `UPDATE quota.reservations SET created_at = now() - interval '25 hours' WHERE reservation_id = $1`,
      [job],
    );
    const open = await ages();
    expect(open.sync).toBeGreaterThanOrEqual(660);
    expect(open.sync).toBeLessThan(700);
    expect(open.job).toBeGreaterThanOrEqual(90_000);
    expect(open.job).toBeLessThan(90_060);
    await t.client.release({ reservationId: sync });
    await t.client.commit({ reservationId: job });
    expect(await ages()).toEqual({ sync: 0, job: 0 });
  });
});
