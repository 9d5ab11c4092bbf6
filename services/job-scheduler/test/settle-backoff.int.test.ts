import { randomUUID } from 'node:crypto';
import type { Pool } from '@dnc/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobSweeps } from '../src/store/sweeps.js';
import { DEFAULT_POLICY, scratchJobsDatabase } from './support/scratch-db.js';

// Found by a review (2026-12-04): a failed settlement's wait was kept per job, in each replica, and applied
// after the oldest 100 unsettled jobs were chosen: an organization with 100 unsettled jobs older than every
// other organization's (its account row held locked) filled the batch on every tick, and the others were
// never reached; with two replicas each retried it at once. The wait is now the account's, in the database,
// and the batch is chosen among the accounts that do not wait.
let db: Awaited<ReturnType<typeof scratchJobsDatabase>>;
let pool: Pool;

/** A job of `org` in mx that ended `ageS` seconds ago, its release still to make. */
async function ended(org: string, ageS: number): Promise<string> {
  const id = randomUUID();
  await pool.query(
    `INSERT INTO jobs.jobs (id, org_id, country, status, submitted_count, reservation_id, hard_cap_at,
       created_at, terminal_at, quota_settlement, error)
     VALUES ($1, $2, 'mx', 'expired', 1, $3, now(), now() - make_interval(secs => $4 + 60),
       now() - make_interval(secs => $4), 'release', 'job_expired')`,
    [id, org, `res_${id}`, ageS],
  );
  return id;
}

/** A wait's count of failures and the seconds it has left: columns `failures` and `until` of `from`. */
async function waitOf(failures: string, until: string, from: string, id: string) {
  const r = await pool.query<{ failures: number; s: number }>(
    `SELECT ${failures} AS failures, extract(epoch FROM ${until} - now())::float AS s FROM ${from}`,
    [id],
  );
  return r.rows[0]!;
}

beforeAll(async () => {
  db = await scratchJobsDatabase('settle_backoff');
  pool = db.pool;
});

afterAll(async () => {
  await db?.drop();
});

describe('a failed settlement’s wait', () => {
  it('is its account’s, shared by every replica, and the batch is chosen among the accounts that do not wait', async () => {
    const sweeps = new JobSweeps(pool, DEFAULT_POLICY);
    const [blocked, other] = [randomUUID(), randomUUID()];
    const old: string[] = [];
    for (let i = 0; i < 12; i++) old.push(await ended(blocked, 600 - i));
    const later = await ended(other, 60);
    const batch = async () => (await sweeps.unsettled(10)).map((j) => j.id);
    expect(await batch()).toEqual(old.slice(0, 10));

    const [first] = await sweeps.unsettled(1);
    await sweeps.deferSettlements(first!, 5_000);
    // Every job of the account waits, not only the one that failed; the other organization's is reached.
    expect(await batch()).toEqual([later]);
    // As another replica sees it.
    const seen = await new JobSweeps(pool, DEFAULT_POLICY).settleBackoffs();
    expect(seen.get(`${blocked}/mx`)).toEqual({ waiting: true });
    expect(seen.has(`${other}/mx`)).toBe(false);

    // Doubling per failure, at most a minute.
    const until = async () =>
      (
        await pool.query<{ s: number }>(
          'SELECT extract(epoch FROM until - now())::float AS s FROM jobs.settle_backoff WHERE org_id = $1',
          [blocked],
        )
      ).rows[0]!.s;
    expect(await until()).toBeGreaterThan(9);
    expect(await until()).toBeLessThanOrEqual(10);
    await sweeps.deferSettlements(first!, 5_000);
    expect(await until()).toBeGreaterThan(19);
    for (let i = 0; i < 6; i++) await sweeps.deferSettlements(first!, 5_000);
    expect(await until()).toBeLessThanOrEqual(60);
    expect(await until()).toBeGreaterThan(59);

    // A settlement of the account that succeeds ends the wait.
    await sweeps.clearSettleBackoff(first!);
    expect(await batch()).toEqual(old.slice(0, 10));
  });

  it('of one job alone leaves its account’s others; a hold of unknown cause keeps the count and a longer wait', async () => {
    const sweeps = new JobSweeps(pool, DEFAULT_POLICY);
    const org = randomUUID();
    const [refused, next] = [await ended(org, 300), await ended(org, 200)];
    const mine = async () =>
      (await sweeps.unsettled(100)).map((j) => j.id).filter((id) => id === refused || id === next);
    expect(await mine()).toEqual([refused, next]);

    await sweeps.deferJobSettlement(refused, 5_000);
    expect(await mine()).toEqual([next]);
    const job = () => waitOf('settle_failures', 'settle_after', 'jobs.jobs WHERE id = $1', refused);
    expect(await job()).toMatchObject({ failures: 1 });
    expect((await job()).s).toBeGreaterThan(9);
    expect((await job()).s).toBeLessThanOrEqual(10);
    for (let i = 0; i < 7; i++) await sweeps.deferJobSettlement(refused, 5_000);
    expect((await job()).s).toBeLessThanOrEqual(60);
    expect((await job()).s).toBeGreaterThan(59);
    expect((await sweeps.settleBackoffs()).has(`${org}/mx`)).toBe(false);

    // Quota may be down for everyone: the account is held a short while, its count of failures unchanged,
    // and a longer wait already set is kept.
    const [nextRow] = (await sweeps.unsettled(100)).filter((j) => j.id === next);
    await sweeps.holdSettlements(nextRow!, 1_000);
    expect(await mine()).toEqual([]);
    const account = () => waitOf('failures', 'until', 'jobs.settle_backoff WHERE org_id = $1', org);
    expect(await account()).toMatchObject({ failures: 0 });
    expect((await account()).s).toBeLessThanOrEqual(1);
    // Its first failure of its own waits twice the interval, as any first failure.
    await sweeps.deferSettlements(nextRow!, 5_000);
    expect(await account()).toMatchObject({ failures: 1 });
    expect((await account()).s).toBeGreaterThan(9);
    expect((await account()).s).toBeLessThanOrEqual(10);
    await sweeps.deferSettlements(nextRow!, 5_000);
    expect(await account()).toMatchObject({ failures: 2 });
    await sweeps.holdSettlements(nextRow!, 1_000);
    expect(await account()).toMatchObject({ failures: 2 });
    expect((await account()).s).toBeGreaterThan(19);
  });
});
