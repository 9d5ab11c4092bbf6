import { quotav1 } from '@dnc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type JobsHarness, jobsClient, startJobsHarness } from './support/harness.js';

// Found by a review of the sweeper (2026-12-04): one replica sweeps at a time, and the turn was a session
// advisory lock held for the whole tick on a pooled connection. A scheduler that stopped mid-tick (a
// frozen process or VM, a node partitioned: nothing closes its connection) kept its PostgreSQL backend,
// and with it the lock, until the connection died (never for a stopped process, whose kernel still answers;
// ~2 h of TCP keepalive for a partitioned one), and every other replica skipped every sweep meanwhile: no
// hard cap, no settlement retried, no lost work message published again, no cleanup. The turn is now a
// lease with an expiry, renewed between steps: another replica takes it once it lapses.
//
// Two scheduler processes sweep every 0.5 s with a 2 s hard cap and no worker. Quota is frozen with SIGSTOP
// so that the replica that expires the first job waits in its settlement (5 s deadline), mid-tick; that
// replica is then frozen too, and quota thawed. A second job must still be expired, by the other replica.
describe('a scheduler stopped mid-sweep does not stop the sweeps', () => {
  let h: JobsHarness;
  const replicas = ['job-scheduler', 'job-scheduler#2'] as const;
  const thaw = () => {
    for (const name of ['quota', ...replicas] as const) h?.stack.child(name)?.kill('SIGCONT');
  };

  beforeAll(async () => {
    h = await startJobsHarness({
      label: 'sweeplease',
      registry: ['+525581234567'],
      replicas: { 'job-scheduler': 2 },
      env: { DNC_SWEEP_INTERVAL_MS: '500', DNC_JOB_HARD_CAP_SECONDS: '2', DNC_SWEEP_LEASE_MS: '3000' },
    });
    await h.stack.stop('job-worker');
  }, 120_000);

  afterAll(async () => {
    thaw();
    await h?.close();
  });

  it('the other replica takes the sweep over once the stopped one’s turn lapses', async () => {
    // Read from the database: the stopped replica may be the one the harness's clients call.
    const stored = async (jobId: string) =>
      (await h.db.query('SELECT status FROM jobs.jobs WHERE id = $1', [jobId])).rows[0]?.status;
    const first = await h.submit(['55 1313 1000']);
    h.stack.child('quota')!.kill('SIGSTOP');

    // The replica that expires it logs so, then waits on quota inside the same tick.
    const expiredBy = () => replicas.find((r) => h.stack.logsOf(r).includes(first.jobId));
    await expect.poll(expiredBy, { timeout: 10_000, interval: 20 }).toBeDefined();
    const leader = expiredBy()!;
    h.stack.child(leader)!.kill('SIGSTOP');
    h.stack.child('quota')!.kill('SIGCONT');
    const other = replicas.find((r) => r !== leader)!;

    // Submitted through the replica still running, as admission would after a failed call.
    const jobs = await jobsClient(h.stack, h.stack.addresses.schedulers[replicas.indexOf(other)]);
    const jobId = crypto.randomUUID();
    await h.quota.reserve({
      reservationId: `res_${jobId}`,
      orgId: h.org,
      country: 'mx',
      amount: 1n,
      kind: quotav1.UsageKind.JOB,
    });
    await jobs.submitJob({
      jobId,
      orgId: h.org,
      reservationId: `res_${jobId}`,
      country: 'mx',
      canonicalPhones: Buffer.from(JSON.stringify(['55 1313 2000'])),
    });
    // Its cap is 2 s away; the stopped replica's turn lapses 3 s after its last renewal. Before, the other
    // replica skipped every tick for as long as the stopped one lived.
    await expect.poll(() => stored(jobId), { timeout: 20_000, interval: 200 }).toBe('expired');
    expect(h.stack.logsOf(other)).toContain(jobId);
    // Both reservations released by the replica still running (the first job's settlement was the stopped
    // replica's, abandoned mid-call).
    await expect
      .poll(() => h.reserved(), { timeout: 15_000, interval: 250 })
      .toEqual({ used: 0, reserved: 0 });

    // The stopped replica resumes into a turn it may no longer hold: nothing is settled twice, no error.
    h.stack.child(leader)!.kill('SIGCONT');
    const third = await h.submit(['55 1313 3000']);
    await expect.poll(() => stored(third.jobId), { timeout: 15_000, interval: 200 }).toBe('expired');
    await expect
      .poll(() => h.reserved(), { timeout: 15_000, interval: 250 })
      .toEqual({ used: 0, reserved: 0 });
    const settled = await h.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM jobs.jobs WHERE quota_settled_at IS NOT NULL',
    );
    expect(settled.rows[0]!.n).toBe(3);
  }, 120_000);
});
