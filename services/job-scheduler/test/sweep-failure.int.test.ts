import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type JobsHarness, startSweepHarness, status } from './support/harness.js';

// Found by a review of data at rest (2026-12-03): the sweep ended its overdue jobs in one transaction,
// oldest first. One job whose ending failed (its input purge refused: a lock or statement timeout, a
// trigger) rolled the whole batch back and came first again on every pass, so every other job past its
// hard cap stayed active, its input kept and its quota reserved. Each job now ends in a savepoint of its
// own. The sweep runs every 0.5 s here, the cap is 2 s, no worker runs.
describe('a job the sweep cannot end does not hold the others back', () => {
  let h: JobsHarness;

  beforeAll(async () => {
    h = await startSweepHarness();
  }, 120_000);

  afterAll(async () => {
    await h?.db.query('DROP TRIGGER IF EXISTS refuse_purge ON jobs.job_blob_segments');
    await h?.db.query('DROP FUNCTION IF EXISTS jobs.refuse_purge()');
    await h?.close();
  });

  it('past the cap, the job whose purge is refused stays; the one after it expires and its input is purged', async () => {
    const stuck = await h.submit(['55 1313 1111']);
    const next = await h.submit(['55 1313 2222']);
    await h.db.query(`CREATE FUNCTION jobs.refuse_purge() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'purge refused by the test'; END $$`);
    await h.db.query(
      `CREATE TRIGGER refuse_purge BEFORE DELETE ON jobs.job_blob_segments FOR EACH ROW
       WHEN (OLD.job_id = '${stuck.jobId}'::uuid) EXECUTE FUNCTION jobs.refuse_purge()`,
    );
    // The stored state (a customer's read would expire the job itself).
    const stored = async (jobId: string) => (await h.admin.getJobDetail({ jobId })).job?.status;
    await expect.poll(() => stored(next.jobId), { timeout: 10_000 }).toBe(status.EXPIRED);
    const input = await h.db.query(`SELECT 1 FROM jobs.job_blobs WHERE job_id = $1 AND kind = 'input'`, [
      next.jobId,
    ]);
    expect(input.rowCount).toBe(0);
    expect(await stored(stuck.jobId)).toBe(status.QUEUED);

    // The refusal lifted: the next pass ends it too.
    await h.db.query('DROP TRIGGER refuse_purge ON jobs.job_blob_segments');
    await expect.poll(() => stored(stuck.jobId), { timeout: 10_000 }).toBe(status.EXPIRED);
  });
});
