import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type JobsHarness, startSweepHarness, status } from './support/harness.js';

// Found by a review of v2 money under faults (2026-12-04): the sweeper retries settlements oldest first and
// stops at the first that fails (a quota that hangs would otherwise hold the tick for a deadline per job).
// One organization's account row held locked (a stuck transaction, an operator's hand) therefore stopped
// every other organization's settlements behind it, each tick, for as long as the lock lasted: their
// reservations stayed held and their succeeded jobs uncharged. A settlement that failed now waits a while
// before it is tried again, and the others go first. The lock is real: a second PostgreSQL connection
// holds the account rows, as a stuck transaction would.
describe('one organization whose settlement fails does not starve the others', () => {
  let h: JobsHarness;
  const other = crypto.randomUUID();
  const lockers: pg.Client[] = [];

  /** Hold an organization's account rows in a transaction of a connection of its own. */
  async function lockAccounts(org: string): Promise<pg.Client> {
    const c = new pg.Client({ connectionString: h.stack.databaseUrl });
    await c.connect();
    await c.query('BEGIN');
    await c.query('SELECT 1 FROM quota.accounts WHERE org_id = $1 FOR UPDATE', [org]);
    lockers.push(c);
    return c;
  }
  const unlock = async (c: pg.Client) => {
    await c.query('ROLLBACK');
    await c.end();
    lockers.splice(lockers.indexOf(c), 1);
  };
  const settledAt = async (jobId: string) =>
    (await h.db.query('SELECT quota_settled_at FROM jobs.jobs WHERE id = $1', [jobId])).rows[0]
      ?.quota_settled_at ?? null;

  beforeAll(async () => {
    h = await startSweepHarness();
    await h.quotaAdmin.setLimit({ orgId: other, country: 'mx', limit: 1_000n });
  }, 120_000);

  afterAll(async () => {
    for (const c of [...lockers]) await unlock(c).catch(() => {});
    await h?.close();
  });

  it('a later job of another organization is settled while the first one’s account stays locked', async () => {
    // The first job ends first (its cap is 2 s), so it is the oldest unsettled one on every sweep.
    const first = await h.submit(['55 1313 1000']);
    const firstLock = await lockAccounts(h.org);
    const later = await h.submit(['55 1313 2000'], { org: other });
    const laterLock = await lockAccounts(other);

    // Both expire; the first one's release fails (quota waits on the locked row past the 5 s deadline),
    // twice, so at least one whole sweep has passed since both ended (the later one was tried in it, and
    // failed, or was not reached).
    const failures = (jobId: string) =>
      h.stack
        .logsOf('job-scheduler')
        .split('\n')
        .filter((l) => l.includes(jobId) && l.includes('quota settlement failed; will retry')).length;
    await expect
      .poll(() => failures(first.jobId), { timeout: 45_000, interval: 100 })
      .toBeGreaterThanOrEqual(2);
    for (const j of [first, later])
      expect((await h.admin.getJobDetail({ jobId: j.jobId })).job?.status).toBe(status.EXPIRED);
    expect(await settledAt(later.jobId)).toBeNull();

    // The other organization's lock ends; the first one's stays.
    await unlock(laterLock);
    await expect.poll(() => settledAt(later.jobId), { timeout: 30_000, interval: 250 }).not.toBeNull();
    expect(await h.reserved(other)).toEqual({ used: 0, reserved: 0 });
    expect(await settledAt(first.jobId)).toBeNull();

    await unlock(firstLock);
    await expect.poll(() => settledAt(first.jobId), { timeout: 60_000, interval: 250 }).not.toBeNull();
    expect(await h.reserved()).toEqual({ used: 0, reserved: 0 });
  }, 150_000);
});
