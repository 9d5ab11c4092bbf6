import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type JobsHarness,
  plaintextInDatabase,
  reason,
  startJobsHarness,
  status,
} from './support/harness.js';

const seconds = (ts: { seconds: bigint } | undefined) => Number(ts?.seconds ?? 0n);

async function metric(h: JobsHarness, name: string): Promise<number> {
  const port = h.stack.addresses.metrics['job-scheduler'];
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  let total = 0;
  for (const line of text.split('\n')) if (line.startsWith(name)) total += Number(line.split(' ').at(-1));
  return total;
}

describe('hard cap and retention (periods shortened by configuration)', () => {
  let h: JobsHarness;

  beforeAll(async () => {
    h = await startJobsHarness({
      registry: ['+525581234567'],
      env: {
        DNC_SWEEP_INTERVAL_MS: '200',
        DNC_JOB_HARD_CAP_SECONDS: '3',
        DNC_RESULT_TTL_SECONDS: '4',
        // The result's purge waits twice a download's longest time past its TTL: 1 s here.
        DNC_RESULT_STREAM_MAX_MS: '500',
        DNC_METADATA_TTL_SECONDS: '8',
        // Its minimum (7 days): the fences below are aged around it.
        DNC_IDEMPOTENCY_RETENTION_SECONDS: '604800',
      },
    });
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  it('a job not terminal within the hard cap becomes expired/job_expired; quota released; input purged', async () => {
    await h.stack.stop('job-worker');
    const before = await h.reserved();
    const job = await h.submit(['55 1212 3434']);
    expect(seconds(job.expiresAt) - seconds(job.createdAt)).toBe(3);
    const done = await h.waitFor(job.jobId, (j) => j.status !== status.QUEUED, 10_000);
    expect(done.status).toBe(status.EXPIRED);
    expect(done.error?.error).toBe('job_expired');
    // expires_at of an expired job: terminalization + metadata TTL.
    expect(seconds(done.expiresAt) - Date.now() / 1000).toBeGreaterThan(5);
    expect(await reason(h.result(job.jobId))).toBe('job_expired');
    await expect.poll(() => h.reserved(), { timeout: 5_000 }).toEqual(before);
    const input = await h.db.query(
      'SELECT count(*)::int AS n FROM jobs.job_blob_segments WHERE job_id = $1',
      [job.jobId],
    );
    expect(input.rows[0].n).toBe(0);
    // The work message still in the queue does not run the expired job.
    await h.stack.start('job-worker');
    await new Promise((r) => setTimeout(r, 1_000));
    const after = await h.admin.getJobDetail({ jobId: job.jobId });
    expect(after.job?.status).toBe(status.EXPIRED);
    expect(after.attempts).toBe(0);
  });

  it('result kept for the result TTL, then 410 job_result_expired; metadata then 404', async () => {
    const job = await h.submit(['55 8123 4567', '55 1212 5656']);
    const done = await h.waitFor(job.jobId, (j) => j.status === status.SUCCEEDED);
    expect(seconds(done.expiresAt) - Date.now() / 1000).toBeLessThanOrEqual(4);
    expect(
      ((await h.result(job.jobId)) as { summary: { total_checked: number } }).summary.total_checked,
    ).toBe(2);
    await expect
      .poll(() => reason(h.result(job.jobId)), { timeout: 8_000, interval: 250 })
      .toBe('job_result_expired');
    // The purge is verified: no blob row of the job is left.
    await expect
      .poll(
        async () =>
          (await h.db.query('SELECT count(*)::int AS n FROM jobs.job_blobs WHERE job_id = $1', [job.jobId]))
            .rows[0].n,
        { timeout: 3_000 },
      )
      .toBe(0);
    await expect
      .poll(() => reason(h.jobs.getJob({ orgId: h.org, jobId: job.jobId })), {
        timeout: 10_000,
        interval: 250,
      })
      .toBe('job_not_found');
    expect(await reason(h.result(job.jobId))).toBe('job_not_found');
  });

  it('a failing cleanup stays retryable and observable (metric and cleanup status), then completes', async () => {
    await h.db.query(`
      CREATE OR REPLACE FUNCTION jobs.test_refuse_result_purge() RETURNS trigger AS $$
      BEGIN
        IF OLD.kind = 'result' THEN RAISE EXCEPTION 'purge refused by test'; END IF;
        RETURN OLD;
      END $$ LANGUAGE plpgsql;
      CREATE TRIGGER test_refuse_result_purge BEFORE DELETE ON jobs.job_blobs
        FOR EACH ROW EXECUTE FUNCTION jobs.test_refuse_result_purge();`);
    try {
      const failuresBefore = await metric(h, 'dnc_cleanup_failures_total');
      const job = await h.submit(['55 1212 7878']);
      await h.waitFor(job.jobId, (j) => j.status === status.SUCCEEDED);
      await expect
        .poll(
          async () => (await h.admin.getCleanupStatus({})).tasks.find((t) => t.jobId === job.jobId)?.attempts,
          {
            timeout: 10_000,
            interval: 250,
          },
        )
        .toBeGreaterThan(0);
      const cli = (await h.stack.admin(['jobs', 'cleanup-status'])) as {
        failed: number;
        tasks: { job_id: string; target: string; last_error?: string }[];
      };
      expect(cli.failed).toBeGreaterThan(0);
      const task = cli.tasks.find((t) => t.job_id === job.jobId);
      expect(task?.target).toBe('result');
      expect(task?.last_error).toBeTruthy();
      expect(await metric(h, 'dnc_cleanup_failures_total')).toBeGreaterThan(failuresBefore);
      // The result stays unavailable once its retention passed, even while the purge is failing.
      expect(await reason(h.result(job.jobId))).toBe('job_result_expired');
      await h.db.query('DROP TRIGGER test_refuse_result_purge ON jobs.job_blobs');
      await expect
        .poll(
          async () =>
            (await h.admin.getCleanupStatus({})).tasks.some(
              (t) => t.jobId === job.jobId && t.target === 'result',
            ),
          {
            timeout: 15_000,
            interval: 250,
          },
        )
        .toBe(false);
    } finally {
      await h.db.query('DROP TRIGGER IF EXISTS test_refuse_result_purge ON jobs.job_blobs');
    }
  });

  it('fenced job ids are purged once past the idempotency retention, and refuse a late SubmitJob until then', async () => {
    // Two ids fenced by admission's claim reconciler (FenceJob as admission calls it); one is aged past
    // the 7-day retention, the other just inside it. Nothing else deletes a fence: before the sweeper
    // purged them, jobs.fenced_jobs only grew.
    const old = randomUUID();
    const recent = randomUUID();
    for (const id of [old, recent]) expect((await h.admissionJobs.fenceJob({ jobId: id })).fenced).toBe(true);
    await h.db.query(
      `UPDATE jobs.fenced_jobs SET fenced_at = now() - make_interval(secs => $2) WHERE job_id = $1`,
      [old, 604_800 + 60],
    );
    await h.db.query(
      `UPDATE jobs.fenced_jobs SET fenced_at = now() - make_interval(secs => $2) WHERE job_id = $1`,
      [recent, 604_800 - 3_600],
    );
    const fenced = async () =>
      (
        await h.db.query<{ job_id: string }>('SELECT job_id FROM jobs.fenced_jobs WHERE job_id = ANY($1)', [
          [old, recent],
        ])
      ).rows
        .map((r) => r.job_id)
        .sort();
    await expect.poll(fenced, { timeout: 10_000, interval: 200 }).toEqual([recent]);
    // Several sweeps later the fence inside the retention is still there and still refuses its id.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await fenced()).toEqual([recent]);
    const late = h.jobs.submitJob({
      jobId: recent,
      orgId: h.org,
      reservationId: `res_${recent}`,
      country: 'mx',
      canonicalPhones: Buffer.from(JSON.stringify(['55 1111 4444'])),
    });
    expect(await reason(late)).toBe('platform_failure');
    expect((await h.db.query('SELECT 1 FROM jobs.jobs WHERE id = $1', [recent])).rowCount).toBe(0);
  });

  it('no plaintext number in Postgres or in any log; no reservation left behind', async () => {
    expect(await plaintextInDatabase(h.db, ['81234567', '12123434', '12125656', '12127878'])).toEqual([]);
    for (const n of ['8123 4567', '1212 3434', '1212 5656']) expect(h.stack.logs()).not.toContain(n);
    expect((await h.reserved()).reserved).toBe(0);
  });
});
