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
    const [blocked, other] = [`org_${randomUUID()}`, `org_${randomUUID()}`];
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
});
