import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type JobsHarness, reason, startJobsHarness, status } from './support/harness.js';

// Found by a read-only review of resource bounds (2026-12-03): a result download whose reader stops
// reading holds what its stream read ahead (a batch of segments opened at once, the next batch, the
// message waiting for the socket: several MiB) until its caller's deadline, and nothing bounded how
// many the scheduler served at once: one organization's stalled downloads of a large result, repeated
// within its rate limit, could take the scheduler past its memory limit, and every customer's v2 calls
// with it. Downloads are held open here for real: each waits on a table lock the test holds, after it
// took its slot.

let h: JobsHarness;
let locker: pg.Client;

beforeAll(async () => {
  h = await startJobsHarness({
    registry: ['+525511112222'],
    processEnv: {
      'job-scheduler': { DNC_RESULT_STREAMS_MAX: '3', DNC_RESULT_STREAMS_PER_ORG: '2' },
    },
  });
  locker = new pg.Client({ connectionString: h.stack.databaseUrl });
  await locker.connect();
}, 120_000);

afterAll(async () => {
  await locker?.end();
  await h?.close();
});

/**
 * Downloads waiting on the lock: their first read of the result (its header row, `wrapped_dek`). Not
 * asked in the locker's transaction: pg_stat_activity is read once per transaction.
 */
const lockWaiters = async () =>
  (
    await h.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
       WHERE datname = current_database() AND state = 'active' AND wait_event_type = 'Lock'
         AND query LIKE '%wrapped_dek%'`,
    )
  ).rows[0]!.n;

describe('result downloads streamed at once', () => {
  it('are bounded per organization and in all; over a bound, a retryable platform failure at once', async () => {
    const other = randomUUID();
    await h.quotaAdmin.setLimit({ orgId: other, country: 'mx', limit: 1_000n });
    const mine = await h.submit(['55 1111 2222', '55 1111 3333']);
    const theirs = await h.submit(['55 1111 4444'], { org: other });
    await h.waitFor(mine.jobId, (j) => j.status === status.SUCCEEDED);
    await h.waitFor(theirs.jobId, (j) => j.status === status.SUCCEEDED, 30_000, other);

    await locker.query('BEGIN');
    await locker.query('LOCK TABLE jobs.job_blobs IN ACCESS EXCLUSIVE MODE');
    const held = [h.result(mine.jobId), h.result(mine.jobId)];
    for (const p of held) p.catch(() => {});
    await expect.poll(lockWaiters, { timeout: 10_000 }).toBe(2);
    // The organization's third at once: refused without waiting for anything.
    const t0 = Date.now();
    expect(await reason(h.result(mine.jobId))).toBe('platform_failure');
    expect(Date.now() - t0).toBeLessThan(2_000);
    // Another organization's first: served (it waits on the lock like the others).
    const theirsHeld = h.result(theirs.jobId, other);
    theirsHeld.catch(() => {});
    await expect.poll(lockWaiters, { timeout: 10_000 }).toBe(3);
    // The process's maximum reached: refused whatever the organization.
    expect(await reason(h.result(theirs.jobId, other))).toBe('platform_failure');
    await locker.query('COMMIT');

    const results = (await Promise.all([...held, theirsHeld])) as { summary: { total_checked: number } }[];
    expect(results.map((r) => r.summary.total_checked)).toEqual([2, 2, 1]);
    // Every slot was given back: downloads are served again.
    expect(
      ((await h.result(mine.jobId)) as { summary: { total_checked: number } }).summary.total_checked,
    ).toBe(2);
    const metrics = await fetch(`http://127.0.0.1:${h.stack.addresses.metrics['job-scheduler']}/metrics`);
    expect(await metrics.text()).toMatch(/^dnc_job_result_streams_refused_total(\{[^}]*\})? 2$/m);
  });
});
