import type { PoolClient } from '@dnc/kit';
import { quotaSettlementFor, type RetentionPolicy, resultPurgeDelaySeconds } from '../domain/states.js';
import { purgeBlob } from './blobs.js';
import { type JobRow, type Raw, type Terminalization, toRow } from './job-row.js';

// The two steps every ending of a job shares: lock the job a worker holds the lease of, and move a
// locked active job to its terminal state with everything that goes with it, in the caller's transaction.
//
// A job's row is locked FOR NO KEY UPDATE everywhere, never FOR UPDATE: the rows of a blob being written
// hold a KEY SHARE lock on it through their foreign key, which FOR UPDATE would wait for (a cancel behind
// a 25 MiB result's write, final-write.ts). Only the deletion of the row (its metadata's purge) waits.

export async function lockLeased(
  client: PoolClient,
  jobId: string,
  token: string,
): Promise<JobRow | undefined> {
  const r = await client.query(
    `SELECT * FROM jobs.jobs WHERE id = $1 AND lease_token = $2 AND status = 'running' FOR NO KEY UPDATE`,
    [jobId, token],
  );
  return r.rows[0] ? toRow(r.rows[0] as Raw) : undefined;
}

/**
 * Move a locked active job to a terminal state: JobError only for failed/expired, lease cleared,
 * reservation marked for commit or release, input purged in the same transaction, and the
 * retention tasks scheduled (input verification now, metadata at its TTL, the result at its TTL and
 * the purge delay of a download in progress).
 */
export async function terminalizeLocked(
  client: PoolClient,
  policy: RetentionPolicy,
  job: JobRow,
  t: Terminalization,
): Promise<JobRow> {
  const u = await client.query(
    `UPDATE jobs.jobs SET status = $2, terminal_at = now(), error = $3, error_retry_after = $4,
       lease_token = NULL, lease_expires_at = NULL, external_calls = 0,
       cancel_requested = (cancel_requested OR $2 = 'cancelled'),
       quota_settlement = $5, input_purged_at = now()
     WHERE id = $1 AND status IN ('queued', 'running') RETURNING *`,
    [
      job.id,
      t.to,
      t.to === 'failed' || t.to === 'expired' ? (t.error ?? 'platform_failure') : null,
      t.retryAfterSeconds || null,
      quotaSettlementFor(t.to),
    ],
  );
  if (u.rowCount !== 1) throw new Error('terminalize: job is not active');
  await client.query('INSERT INTO jobs.job_transitions (job_id, status, note) VALUES ($1, $2, $3)', [
    job.id,
    t.to,
    t.note,
  ]);
  await purgeBlob(client, job.id, 'input');
  await client.query(
    `INSERT INTO jobs.cleanup_tasks (job_id, target, due_at) VALUES
       ($1, 'input', now()),
       ($1, 'metadata', now() + make_interval(secs => $2))
     ON CONFLICT DO NOTHING`,
    [job.id, policy.metadataTtlSeconds],
  );
  if (t.to === 'succeeded') {
    await client.query(
      `INSERT INTO jobs.cleanup_tasks (job_id, target, due_at)
       VALUES ($1, 'result', now() + make_interval(secs => $2)) ON CONFLICT DO NOTHING`,
      [job.id, policy.resultTtlSeconds + resultPurgeDelaySeconds(policy)],
    );
  }
  return toRow(u.rows[0] as Raw);
}

/**
 * The spec's hard cap, where a job ends: an active job not terminal within it is `expired` (job_expired),
 * whatever arrives after it (a result, a failure, a cancel's reconciliation), as the sweep would have
 * made it; undefined while the job is within its cap. Judged by the database's clock, as the sweep does,
 * at the moment of the check (`clock_timestamp()`: `now()` is when the transaction began, and a final
 * write judged by it kept a result that took it past the cap).
 */
export async function expireIfPastCap(
  client: PoolClient,
  policy: RetentionPolicy,
  job: JobRow,
): Promise<JobRow | undefined> {
  const r = await client.query(
    'SELECT hard_cap_at <= clock_timestamp() AS past FROM jobs.jobs WHERE id = $1',
    [job.id],
  );
  if (!r.rows[0]?.past) return undefined;
  return terminalizeLocked(client, policy, job, {
    to: 'expired',
    error: 'job_expired',
    note: 'hard cap reached',
  });
}
