import { randomUUID } from 'node:crypto';
import { createClient } from '@connectrpc/connect';
import { grpcTransport, readPublicReason } from '@dnc/kit';
import { quotav1 } from '@dnc/proto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firstDay, MAX_USAGE_DAYS } from '../src/organization.js';
import { startTestQuota, type TestQuota } from './support.js';

// Issue 16: an organization's quota this month and its daily usage for the dashboard, v1 and v2 apart.
let q: TestQuota;
let org: ReturnType<typeof createClient<typeof quotav1.OrganizationQuotaService>>;

beforeAll(async () => {
  q = await startTestQuota('quota_org');
  org = createClient(
    quotav1.OrganizationQuotaService,
    grpcTransport(`http://127.0.0.1:${q.quota.port}`, [], {
      security: await q.pki.security('dashboard'),
      peer: 'quota',
    }),
  );
});

afterAll(async () => {
  await q.stop();
});

async function use(orgId: string, country: string, amount: number, kind: quotav1.UsageKind) {
  const reservationId = randomUUID();
  await q.client.reserve({ reservationId, orgId, country, amount: BigInt(amount), kind });
  await q.client.commit({ reservationId });
}

/** A usage record of a past day (the ledger only writes "now"; history is what the chart reads). */
async function pastRecord(orgId: string, country: string, count: number, kind: number, daysAgo: number) {
  const db = new pg.Client({ connectionString: q.databaseUrl });
  await db.connect();
  try {
    await db.query(
      `INSERT INTO quota.usage_records (reservation_id, org_id, country, period, count, kind, created_at)
       VALUES ($1, $2, $3, 'past', $4, $5, now() - make_interval(days => $6))`,
      [randomUUID(), orgId, country, count, kind, daysAgo],
    );
  } finally {
    await db.end();
  }
}

async function reason(call: Promise<unknown>) {
  try {
    await call;
    return 'ok';
  } catch (error) {
    return readPublicReason(error)?.reason ?? String(error);
  }
}

describe('OrganizationQuotaService', () => {
  it("this month's limit, used and reserved per country of the organization only", async () => {
    const orgId = randomUUID();
    await q.admin.setLimit({ orgId, country: 'co', limit: 1000n });
    await q.admin.setLimit({ orgId, country: 'mx', limit: 500n });
    await use(orgId, 'co', 30, quotav1.UsageKind.SYNC);
    await q.client.reserve({
      reservationId: randomUUID(),
      orgId,
      country: 'co',
      amount: 7n,
      kind: quotav1.UsageKind.JOB,
    });
    const { accounts } = await org.getMonthQuota({ orgId });
    expect(accounts.map((a) => [a.country, Number(a.limit), Number(a.used), Number(a.reserved)])).toEqual([
      ['co', 1000, 30, 7],
      ['mx', 500, 0, 0],
    ]);
    expect((await org.getMonthQuota({ orgId: randomUUID() })).accounts).toEqual([]);
  });

  it('daily usage of the last 90 days: v1 and v2 apart, older days and other organizations left out', async () => {
    const orgId = randomUUID();
    const other = randomUUID();
    await q.admin.setLimit({ orgId, country: 'co', limit: 1_000_000n });
    await q.admin.setLimit({ orgId, country: 'mx', limit: 1_000_000n });
    await q.admin.setLimit({ orgId: other, country: 'co', limit: 1_000_000n });
    await use(orgId, 'co', 10, quotav1.UsageKind.SYNC);
    await use(orgId, 'co', 5, quotav1.UsageKind.SYNC);
    await use(orgId, 'co', 200, quotav1.UsageKind.JOB);
    await use(orgId, 'mx', 3, quotav1.UsageKind.JOB);
    await use(other, 'co', 999, quotav1.UsageKind.SYNC);
    await pastRecord(orgId, 'co', 40, quotav1.UsageKind.SYNC, 89); // first day of the range
    await pastRecord(orgId, 'co', 60, quotav1.UsageKind.SYNC, 90); // one day before it
    const today = new Date().toISOString().slice(0, 10);
    const res = await org.getDailyUsage({ orgId, days: 0 });
    expect(res.fromDay).toBe(firstDay(new Date(), MAX_USAGE_DAYS));
    const rows = res.days.map((d) => [d.day, d.country, Number(d.v1Count), Number(d.v2Count)]);
    expect(rows).toEqual([
      [res.fromDay, 'co', 40, 0],
      [today, 'co', 15, 200],
      [today, 'mx', 0, 3],
    ]);
    const one = await org.getDailyUsage({ orgId, days: 1 });
    expect(one.fromDay).toBe(today);
    expect(one.days).toHaveLength(2);
  });

  it(`days: ${MAX_USAGE_DAYS} is the limit, one more is refused; org_id must be a UUID`, async () => {
    const orgId = randomUUID();
    expect(await reason(org.getDailyUsage({ orgId, days: MAX_USAGE_DAYS }))).toBe('ok');
    expect(await reason(org.getDailyUsage({ orgId, days: MAX_USAGE_DAYS + 1 }))).toBe('validation_error');
    expect(await reason(org.getMonthQuota({ orgId: 'acme' }))).toBe('validation_error');
  });
});

describe('firstDay', () => {
  it('counts today as the last day of the range, in UTC', () => {
    expect(firstDay(new Date('2026-03-01T23:30:00Z'), 1)).toBe('2026-03-01');
    expect(firstDay(new Date('2026-03-01T00:10:00Z'), 2)).toBe('2026-02-28');
    expect(firstDay(new Date('2026-03-31T12:00:00Z'), 90)).toBe('2026-01-01');
  });
});
