import { randomUUID } from 'node:crypto';
import { isTerminalJobStatus } from '@dnc/api-contract/limits';
import type { PoolClient } from '@dnc/kit';
import type { RetentionPolicy } from '../domain/states.js';
import { type JobRow, type Raw, toRow } from './job-row.js';
import { expireIfPastCap, terminalizeLocked } from './terminalize.js';

/** What claiming a job for one execution attempt came to. */
export type Claim =
  | { kind: 'claimed'; job: JobRow; token: string }
  | { kind: 'terminal' | 'gone' }
  | { kind: 'held'; retryInMs: number }
  | { kind: 'terminalized'; job: JobRow };

/**
 * Claim a job for one execution attempt with a new lease token, in the caller's transaction: the
 * job row locked, then claimed when queued or running under a lease that ran out (its worker died);
 * a job claimed too often fails with platform_failure, a stale job whose cancel was requested
 * becomes cancelled.
 */
export async function claimLocked(
  client: PoolClient,
  policy: RetentionPolicy,
  jobId: string,
  leaseMs: number,
  maxAttempts: number,
): Promise<Claim> {
  const r = await client.query(
    `SELECT *, GREATEST(0, EXTRACT(EPOCH FROM (lease_expires_at - now())) * 1000)::int AS lease_left_ms
     FROM jobs.jobs WHERE id = $1 FOR NO KEY UPDATE`,
    [jobId],
  );
  const raw = r.rows[0] as Raw | undefined;
  if (!raw) return { kind: 'gone' };
  const job = toRow(raw);
  if (isTerminalJobStatus(job.status)) return { kind: 'terminal' };
  const leaseLeft = (raw['lease_left_ms'] as number | null) ?? 0;
  if (job.status === 'running' && leaseLeft > 0) return { kind: 'held', retryInMs: leaseLeft };
  // Past its hard cap a job never starts (or resumes): it is expired, as the sweep would make it.
  const expired = await expireIfPastCap(client, policy, job);
  if (expired) return { kind: 'terminalized', job: expired };
  if (job.status === 'running' && job.cancelRequested) {
    const done = await terminalizeLocked(client, policy, job, {
      to: 'cancelled',
      note: 'cancel reconciled after the worker was lost',
    });
    return { kind: 'terminalized', job: done };
  }
  // Executions a shutting-down worker handed back do not count (JobStore.handBack).
  if (job.attempts - job.handedBack >= maxAttempts) {
    const done = await terminalizeLocked(client, policy, job, {
      to: 'failed',
      error: 'platform_failure',
      note: 'too many execution attempts',
    });
    return { kind: 'terminalized', job: done };
  }
  const token = randomUUID();
  const u = await client.query(
    `UPDATE jobs.jobs SET status = 'running', lease_token = $2,
       lease_expires_at = now() + make_interval(secs => $3), started_at = COALESCE(started_at, now()),
       attempts = attempts + 1, external_calls = 0
     WHERE id = $1 RETURNING *`,
    [jobId, token, leaseMs / 1000],
  );
  await client.query(`INSERT INTO jobs.job_transitions (job_id, status, note) VALUES ($1, 'running', $2)`, [
    jobId,
    job.status === 'queued' ? 'execution started' : 'execution resumed after a lost lease',
  ]);
  return { kind: 'claimed', job: toRow(u.rows[0] as Raw), token };
}
