import { randomUUID } from 'node:crypto';
import type { Pool } from '@dnc/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobSweeps } from '../src/store/sweeps.js';
import { DEFAULT_POLICY, scratchJobsDatabase } from './support/scratch-db.js';

// Found by a review (2026-12-04): the sweeper's batch of jobs whose work message may be missing was the
// oldest 200 by creation. A queued job with a confirmed dispatch is published again only when its country's
// queue is empty; under a backlog of such jobs (waiting their turn for longer than the redispatch delay)
// the batch was full of jobs the sweeper then skipped, and a job never published (NATS away at its submit)
// or abandoned by its worker (lease expired) behind them was not reached, tick after tick.
let db: Awaited<ReturnType<typeof scratchJobsDatabase>>;
let pool: Pool;

/** A job created `ageS` seconds ago, in the given dispatch state. */
async function job(ageS: number, state: 'dispatched' | 'never_published' | 'abandoned'): Promise<string> {
  const id = randomUUID();
  await pool.query(
    `INSERT INTO jobs.jobs (id, org_id, country, status, submitted_count, reservation_id, hard_cap_at,
       created_at, dispatched_at, lease_expires_at)
     VALUES ($1, $2, 'co', $3, 1, $4, now() + interval '1 hour', now() - make_interval(secs => $5),
       CASE WHEN $6 = 'never_published' THEN NULL ELSE now() - make_interval(secs => $5) END,
       CASE WHEN $6 = 'abandoned' THEN now() - make_interval(secs => $5) END)`,
    [id, randomUUID(), state === 'abandoned' ? 'running' : 'queued', randomUUID(), ageS, state],
  );
  return id;
}

beforeAll(async () => {
  db = await scratchJobsDatabase('redispatch');
  pool = db.pool;
});

afterAll(async () => {
  await db?.drop();
});

describe('the sweeper’s redispatch batch', () => {
  it('holds the jobs never published and those abandoned by their worker, whatever backlog of dispatched ones is older', async () => {
    const backlog: string[] = [];
    for (let i = 0; i < 12; i++) backlog.push(await job(600 - i, 'dispatched'));
    const neverPublished = await job(120, 'never_published');
    const abandoned = await job(100, 'abandoned');
    const sweeps = new JobSweeps(pool, DEFAULT_POLICY);
    const batch = (await sweeps.dispatchCandidates(30_000, 10)).map((j) => j.id);
    expect(batch).toHaveLength(10);
    // The two the sweeper always publishes, first; then the oldest of the backlog.
    expect(batch.slice(0, 2)).toEqual([neverPublished, abandoned]);
    expect(batch.slice(2)).toEqual(backlog.slice(0, 8));
  });
});
