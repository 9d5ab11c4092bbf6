import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type JobsHarness, reason, startJobsHarness, status } from './support/harness.js';

// Found by a review of data at rest (2026-12-03). Spec: "Retention and TTL values are initial policy; a
// country or legal requirement may shorten them". The purge of a result and the hard cap of an active
// job were dated when the job ended or was created and never again: after the result TTL was shortened
// the API answered 410 while the sealed result stayed until its old date (up to 7 days), and after the
// hard cap was shortened a job's `expires_at` was past while it stayed queued. The scheduler now applies
// the periods it starts with to what is stored (shortened only, never lengthened).
describe('retention periods shortened by a restart apply to the jobs already stored', () => {
  let h: JobsHarness;

  beforeAll(async () => {
    h = await startJobsHarness({
      registry: ['+525581234567'],
      env: { DNC_SWEEP_INTERVAL_MS: '200', DNC_RESULT_STREAM_MAX_MS: '500' },
    });
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  it('a stored result is purged at the new TTL, a queued job expires at the new hard cap', async () => {
    const done = await h.submit(['55 8123 4567']);
    await h.waitFor(done.jobId, (j) => j.status === status.SUCCEEDED);
    await h.stack.stop('job-worker');
    const waiting = await h.submit(['55 8123 4568']);
    const segments = async (jobId: string, kind: string) =>
      (
        await h.db.query(
          'SELECT count(*)::int AS n FROM jobs.job_blob_segments WHERE job_id = $1 AND kind = $2',
          [jobId, kind],
        )
      ).rows[0].n as number;
    expect(await segments(done.jobId, 'result')).toBeGreaterThan(0);

    // The operator shortens the result TTL to 2 s and the hard cap to 3 s, and restarts the scheduler.
    await h.stack.stop('job-scheduler');
    Object.assign(h.stack.processes.get('job-scheduler')!.env, {
      DNC_RESULT_TTL_SECONDS: '2',
      DNC_JOB_HARD_CAP_SECONDS: '3',
    });
    await h.stack.start('job-scheduler');

    await expect.poll(() => segments(done.jobId, 'result'), { timeout: 10_000 }).toBe(0);
    expect(await reason(h.result(done.jobId))).toBe('job_result_expired');
    const stored = async () => (await h.admin.getJobDetail({ jobId: waiting.jobId })).job?.status;
    await expect.poll(stored, { timeout: 10_000 }).toBe(status.EXPIRED);
    expect(await segments(waiting.jobId, 'input')).toBe(0);
  });
});
