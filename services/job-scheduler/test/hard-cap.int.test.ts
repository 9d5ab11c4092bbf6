import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type JobsHarness, reason, startJobsHarness, status } from './support/harness.js';

// Spec, States and transitions: "running | hard cap | not terminal within 24 hours of admission | expired |
// JobError job_expired; quota released". Found by a review (2026-12-03): the cap was only applied by the
// sweep, so a result that came after the cap but before the sweep's next pass made the job `succeeded` (and
// charged it), and a worker could start a job already past its cap. The sweep runs rarely here (every 10
// minutes) so that only the job's own ending can apply the cap; the cap is 2 seconds.
describe('the hard cap where a job ends, not only in the sweep', () => {
  let h: JobsHarness;

  beforeAll(async () => {
    h = await startJobsHarness({
      registry: ['+525581234567'],
      env: { DNC_SWEEP_INTERVAL_MS: '600000', DNC_JOB_HARD_CAP_SECONDS: '2' },
    });
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  it('a result that comes after the hard cap is discarded: expired/job_expired, nothing charged', async () => {
    await h.registry.setDrill({ latencyMs: 3_000 });
    try {
      const before = await h.reserved();
      const job = await h.submit(['55 1212 3434']);
      await h.waitFor(job.jobId, (j) => j.status === status.RUNNING, 2_000);
      const done = await h.waitFor(job.jobId, (j) => j.status !== status.RUNNING, 15_000);
      expect(done.status).toBe(status.EXPIRED);
      expect(done.error?.error).toBe('job_expired');
      expect(await reason(h.result(job.jobId))).toBe('job_expired');
      await expect.poll(() => h.reserved(), { timeout: 5_000 }).toEqual(before);
    } finally {
      await h.registry.setDrill({ clear: true });
    }
  });

  it('a job already past its hard cap is never started: a worker that claims it expires it', async () => {
    await h.stack.stop('job-worker');
    const before = await h.reserved();
    const job = await h.submit(['55 1212 5656']);
    await new Promise((r) => setTimeout(r, 2_500));
    // The stored state, not the customer's view (a status read past the cap expires the job itself).
    expect((await h.admin.getJobDetail({ jobId: job.jobId })).job?.status).toBe(status.QUEUED);
    await h.stack.start('job-worker');
    const done = await h.waitFor(job.jobId, (j) => j.status !== status.QUEUED, 15_000);
    expect(done.status).toBe(status.EXPIRED);
    expect(done.error?.error).toBe('job_expired');
    expect((await h.admin.getJobDetail({ jobId: job.jobId })).attempts).toBe(0);
    await expect.poll(() => h.reserved(), { timeout: 5_000 }).toEqual(before);
  });

  it('a status or result read past the hard cap says expired, not queued or running until the sweep passes', async () => {
    await h.stack.stop('job-worker');
    try {
      const before = await h.reserved();
      const job = await h.submit(['55 1212 7878']);
      const queued = await h.submit(['55 1212 7879']);
      await new Promise((r) => setTimeout(r, 2_500));
      // Spec, GET /v2/scrub/{job_id}/result: 410 job_expired, "job did not terminalize before the 24-hour hard cap".
      expect(await reason(h.result(job.jobId))).toBe('job_expired');
      const read = (await h.jobs.getJob({ orgId: h.org, jobId: queued.jobId })).job;
      expect(read?.status).toBe(status.EXPIRED);
      expect(read?.error?.error).toBe('job_expired');
      expect((await h.jobs.getJob({ orgId: h.org, jobId: job.jobId })).job?.status).toBe(status.EXPIRED);
      // Quota released, as the sweep releases it.
      await expect.poll(() => h.reserved(), { timeout: 5_000 }).toEqual(before);
    } finally {
      await h.stack.start('job-worker');
    }
  });

  // Found by a spec-conformance review (2026-12-03): status and result reads applied the cap, a cancel did
  // not, so a cancel past the cap (before the sweep) ended the job `cancelled` instead of `expired`.
  it('a cancel past the hard cap finds the job expired (job_expired, quota released), not cancelled', async () => {
    await h.stack.stop('job-worker');
    try {
      const before = await h.reserved();
      const job = await h.submit(['55 1212 9090']);
      await new Promise((r) => setTimeout(r, 2_500));
      const answer = (await h.jobs.cancelJob({ orgId: h.org, jobId: job.jobId })).job;
      expect(answer?.status).toBe(status.EXPIRED);
      expect(answer?.error?.error).toBe('job_expired');
      expect((await h.jobs.getJob({ orgId: h.org, jobId: job.jobId })).job?.status).toBe(status.EXPIRED);
      const history = (await h.admin.getJobDetail({ jobId: job.jobId })).history.map((x) => x.status);
      expect(history).not.toContain(status.CANCELLED);
      await expect.poll(() => h.reserved(), { timeout: 5_000 }).toEqual(before);
    } finally {
      await h.stack.start('job-worker');
    }
  });
});
