import { quotav1 } from '@dnc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type JobsHarness, startSweepHarness, status } from './support/harness.js';

// Found by a review of the sweeper (2026-12-03): the sweep settled the jobs it ended one after another,
// each call to quota waiting its whole 5 s deadline when quota hangs instead of refusing (a frozen
// process, a partitioned node), and every later step of the tick waited behind them: eight jobs past
// their cap held the next hard cap, the cleanups and the gauges for 40 s, and the settlement step behind
// it another 40. A failed settlement now ends the tick's settlements; the jobs left are settled by a
// later tick. Quota is frozen here with SIGSTOP (its connections stay open, nothing answers); the sweep
// runs every 0.5 s, the cap is 2 s, no worker runs.
describe('a hung quota does not hold the sweep back', () => {
  let h: JobsHarness;
  const resume = () => h?.stack.child('quota')?.kill('SIGCONT');

  beforeAll(async () => {
    h = await startSweepHarness();
  }, 120_000);

  afterAll(async () => {
    resume();
    await h?.close();
  });

  it('with quota frozen, a job past its cap is still expired at once; the reservations are released once quota is back', async () => {
    const stored = async (jobId: string) => (await h.admin.getJobDetail({ jobId })).job?.status;
    // At once, so that the eight pass their cap in the same tick, after quota is frozen.
    const batch = await Promise.all(Array.from({ length: 8 }, (_, i) => h.submit([`55 1313 10${i}0`])));
    // The last job's reservation is made now, while quota answers; its job is stored after the batch expired.
    const late = crypto.randomUUID();
    const reservationId = `res_${late}`;
    await h.quota.reserve({
      reservationId,
      orgId: h.org,
      country: 'mx',
      amount: 1n,
      kind: quotav1.UsageKind.JOB,
    });
    expect(await h.reserved()).toEqual({ used: 0, reserved: 9 });

    h.stack.child('quota')!.kill('SIGSTOP');
    await expect
      .poll(() => Promise.all(batch.map((j) => stored(j.jobId))), { timeout: 10_000 })
      .toEqual(batch.map(() => status.EXPIRED));
    await h.jobs.submitJob({
      jobId: late,
      orgId: h.org,
      reservationId,
      country: 'mx',
      canonicalPhones: Buffer.from(JSON.stringify(['55 1313 2222'])),
    });
    const submitted = Date.now();
    // Its cap is 2 s away; a tick waits at most one quota deadline (5 s). Before, the batch's eight
    // settlements (40 s) came first.
    await expect.poll(() => stored(late), { timeout: 12_000, interval: 200 }).toBe(status.EXPIRED);
    expect(Date.now() - submitted).toBeLessThan(12_000);

    resume();
    await expect
      .poll(() => h.reserved(), { timeout: 20_000, interval: 250 })
      .toEqual({ used: 0, reserved: 0 });
  }, 90_000);
});
