import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type JobsHarness, startJobsHarness, status } from './support/harness.js';

// A succeeded job whose reservation quota no longer holds (released under it) cannot be charged: quota
// refuses the commit for good and the settlement is recorded as final. That is work given away; it must
// be visible (a counter the alert DncJobSettlementRefused reads), once per job, not only a log line.

async function refused(h: JobsHarness, settlement: string): Promise<number> {
  let total = 0;
  for (const name of ['job-scheduler', 'job-worker'] as const) {
    const port = h.stack.addresses.metrics[name];
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    for (const line of text.split('\n'))
      if (
        line.startsWith('dnc_job_quota_settle_refused_total{') &&
        line.includes(`settlement="${settlement}"`)
      )
        total += Number(line.split(' ').at(-1));
  }
  return total;
}

describe('a settlement quota refuses for good is counted once', () => {
  let h: JobsHarness;

  beforeAll(async () => {
    h = await startJobsHarness({ registry: ['+525581234567'], env: { DNC_SWEEP_INTERVAL_MS: '200' } });
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  it('a succeeded job whose reservation was released is counted as a refused commit, once', async () => {
    // Exported at 0 from the start (an alert on increase() sees the first one).
    expect(await refused(h, 'commit')).toBe(0);
    expect(await refused(h, 'release')).toBe(0);

    await h.stack.stop('job-worker');
    const job = await h.submit(['+52 55 8123 4567', '+52 33 9876 5432']);
    // Released under the queued job, as a stale sweep or an operator would.
    await h.quota.release({ reservationId: `res_${job.jobId}` });
    await h.stack.start('job-worker');
    await h.waitFor(job.jobId, (j) => j.status === status.SUCCEEDED);

    await expect.poll(() => refused(h, 'commit'), { timeout: 10_000 }).toBe(1);
    const settled = await h.db.query('SELECT quota_settled_at FROM jobs.jobs WHERE id = $1', [job.jobId]);
    expect(settled.rows[0].quota_settled_at).not.toBeNull();
    // Several sweeps later (every 200 ms), still once: the settler that recorded it counted it.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await refused(h, 'commit')).toBe(1);
    expect(await refused(h, 'release')).toBe(0);
    const logs = `${h.stack.logsOf('job-scheduler')}${h.stack.logsOf('job-worker')}`;
    expect(logs.match(/reservation cannot be settled; recorded as final/g)).toHaveLength(1);
    expect(logs).not.toContain('8123');
  }, 60_000);
});
