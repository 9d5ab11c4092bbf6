import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type JobsHarness, startSweepHarness, status } from './support/harness.js';

// Found by a review of the settlement waits (2026-12-04): an account whose settlement failed waited
// (doubling, at most a minute) whatever the failure was. While quota itself was down, every tick blamed the
// account it tried first, so after quota came back those accounts waited up to a minute more with their
// reservations held; and one job whose settlement quota refused every time held its account's other jobs for
// good (the oldest, tried first after every wait, and the tick stopped at it). A failure is now explained by
// the next attempts before anything waits. Both faults are real: the quota process stopped; a job row whose
// reservation id quota refuses (longer than its 200 characters), as a corrupted row would be.
describe('a failed settlement waits for what failed, not for what was tried first', () => {
  let h: JobsHarness;
  const orgs = Array.from({ length: 3 }, () => crypto.randomUUID());
  const row = async (jobId: string) =>
    (
      await h.db.query<{ quota_settled_at: Date | null; settle_failures: number }>(
        'SELECT quota_settled_at, settle_failures FROM jobs.jobs WHERE id = $1',
        [jobId],
      )
    ).rows[0]!;
  const failures = (jobId: string) =>
    h.stack
      .logsOf('job-scheduler')
      .split('\n')
      .filter((l) => l.includes(jobId) && l.includes('quota settlement failed; will retry')).length;

  beforeAll(async () => {
    h = await startSweepHarness();
    for (const org of orgs) await h.quotaAdmin.setLimit({ orgId: org, country: 'mx', limit: 1_000n });
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  it('while quota is down no account is left waiting after it is back', async () => {
    const jobs = [];
    for (const org of orgs) jobs.push(await h.submit(['55 1313 1000'], { org }));
    await h.stack.stop('quota');
    // Every job expires (its cap is 2 s) and its release fails, tick after tick (every 0.5 s). Six failures
    // each: with a wait doubling per failure of the account tried first, its last wait was 32 s.
    for (const j of jobs)
      await expect
        .poll(() => failures(j.jobId), { timeout: 90_000, interval: 200 })
        .toBeGreaterThanOrEqual(6);
    for (const j of jobs) {
      expect((await h.admin.getJobDetail({ jobId: j.jobId })).job?.status).toBe(status.EXPIRED);
      expect((await row(j.jobId)).quota_settled_at).toBeNull();
    }

    await h.stack.start('quota');
    const back = Date.now();
    for (const j of jobs)
      await expect
        .poll(async () => (await row(j.jobId)).quota_settled_at, { timeout: 20_000, interval: 100 })
        .not.toBeNull();
    // Two sweep intervals of wait at most, and the sweeps themselves; a minute before.
    expect(Date.now() - back).toBeLessThan(8_000);
    for (const org of orgs) expect(await h.reserved(org)).toEqual({ used: 0, reserved: 0 });
  }, 150_000);

  it('jobs quota refuses every time wait alone; their account’s other jobs are settled', async () => {
    const [org] = orgs;
    // Two, before their cap: quota answers InvalidArgument for these reservation ids, on every try (two, so
    // that they are never explained as their account's failure either).
    const refused = [await h.submit(['55 1313 3000'], { org }), await h.submit(['55 1313 3001'], { org })];
    for (const r of refused) {
      const { rowCount } = await h.db.query(
        "UPDATE jobs.jobs SET reservation_id = repeat('r', 201) || $1 WHERE id = $1 AND quota_settled_at IS NULL",
        [r.jobId],
      );
      expect(rowCount).toBe(1);
    }
    const later = await h.submit(['55 1313 4000'], { org });

    await expect
      .poll(async () => (await row(later.jobId)).quota_settled_at, { timeout: 30_000, interval: 200 })
      .not.toBeNull();
    expect((await h.admin.getJobDetail({ jobId: later.jobId })).job?.status).toBe(status.EXPIRED);
    // The refused ones wait on their own (their failures counted on their rows), and their account does not.
    for (const r of refused) {
      await expect
        .poll(async () => (await row(r.jobId)).settle_failures, { timeout: 10_000 })
        .toBeGreaterThanOrEqual(1);
      expect((await row(r.jobId)).quota_settled_at).toBeNull();
    }
    const account = await h.db.query('SELECT 1 FROM jobs.settle_backoff WHERE org_id = $1', [org]);
    expect(account.rowCount).toBe(0);
    // Only the refused jobs' reservations are still held (one number each).
    expect(await h.reserved(org)).toEqual({ used: 0, reserved: 2 });

    // A third job of the account, ended after the refused ones have been retried: settled as well.
    const third = await h.submit(['55 1313 5000'], { org });
    await expect
      .poll(async () => (await row(third.jobId)).quota_settled_at, { timeout: 30_000, interval: 200 })
      .not.toBeNull();
    expect(await h.reserved(org)).toEqual({ used: 0, reserved: 2 });
  }, 120_000);
});
