import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type JobsHarness, reason, startJobsHarness, status } from './support/harness.js';

// Found by a review (2026-12-05). A job's final write (its result sealed into segments, `succeeded`)
// runs in one transaction holding the job's row lock. A worker frozen in the middle of it (SIGSTOP, a VM
// paused, a partition: nothing closes its connection) left its PostgreSQL session idle inside that
// transaction, and the lock held, without limit: a cancel waited on the lock and was answered 503 every
// time, and the hard cap never expired the job (the sweep skips locked rows). Spec, States: "queued |
// cancel | any time | cancelled"; "not terminal within 24 hours of admission | expired". PostgreSQL now
// ends a session idle inside a transaction after DNC_PG_IDLE_IN_TRANSACTION_MS (30 s; 2 s here).
describe('a worker frozen in the middle of a job’s final write', () => {
  let h: JobsHarness;
  const thaw = () => h?.stack.child('job-worker')?.kill('SIGCONT');

  beforeAll(async () => {
    h = await startJobsHarness({
      label: 'frozenwrite',
      registry: ['+525581234567'],
      env: { DNC_PG_IDLE_IN_TRANSACTION_MS: '2000' },
    });
  }, 120_000);

  afterAll(async () => {
    thaw();
    await h?.close();
  });

  it('does not keep its job from being cancelled', async () => {
    // A result segment's INSERT takes 3 s: time to freeze the worker inside the transaction.
    await h.db.query(`CREATE FUNCTION jobs.slow_result() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.kind = 'result' THEN PERFORM pg_sleep(3); END IF; RETURN NEW; END $$`);
    await h.db.query(`CREATE TRIGGER slow_result BEFORE INSERT ON jobs.job_blob_segments
      FOR EACH ROW EXECUTE FUNCTION jobs.slow_result()`);
    const job = await h.submit(['55 8123 4567', '55 8123 4568']);
    const writing = async () =>
      (
        await h.db.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE state = 'active' AND query LIKE 'INSERT INTO jobs.job_blob_segments%' AND pid <> pg_backend_pid()`,
        )
      ).rows[0].n as number;
    await expect.poll(writing, { timeout: 20_000, interval: 10 }).toBeGreaterThan(0);
    h.stack.child('job-worker')!.kill('SIGSTOP');

    const started = Date.now();
    const answer = await h.jobs.cancelJob({ orgId: h.org, jobId: job.jobId }, { timeoutMs: 20_000 });
    expect(answer.job?.status).toBe(status.CANCELLED);
    expect(Date.now() - started).toBeLessThan(12_000);

    // The worker wakes to a session that is gone: nothing it wrote stands, the job stays cancelled.
    thaw();
    await new Promise((r) => setTimeout(r, 2_000));
    expect((await h.admin.getJobDetail({ jobId: job.jobId })).job?.status).toBe(status.CANCELLED);
    expect(await reason(h.result(job.jobId))).toBe('job_result_not_ready');
    const { rows } = await h.db.query(
      'SELECT count(*)::int AS n FROM jobs.job_blob_segments WHERE job_id = $1',
      [job.jobId],
    );
    expect(rows[0].n).toBe(0);
  }, 60_000);
});
