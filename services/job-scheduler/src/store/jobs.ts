import type { JobStatus } from '@dnc/api-contract/limits';
import { inTransaction, type Pool } from '@dnc/kit';
import type { KeyRing } from '../crypto/envelope.js';
import { BLOB_FORMAT, type BlobFormat } from '../crypto/segment-codec.js';
import { type FailureCause, publicJobError } from '../domain/failures.js';
import { type CancelDecision, decideCancel, type RetentionPolicy } from '../domain/states.js';
import { writeBlob } from './blobs.js';
import { type Claim, claimLocked } from './claim.js';
import { type FinalWrite, writeFinal } from './final-write.js';
import {
  CallerGone,
  isJobId,
  JobFenced,
  type JobRow,
  type Raw,
  type Terminalization,
  toRow,
} from './job-row.js';
import { JobSweeps } from './sweeps.js';
import { expireIfPastCap, lockLeased, terminalizeLocked } from './terminalize.js';

export { CallerGone, isJobId, JobFenced, type JobRow, type Raw, type Terminalization, toRow };

/** FenceJob and SubmitJob of one id hold this lock, so a late submit and the fence cannot both win. */
const LOCK_ID = 'SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))';

/** Every read and write of job state. Worker writes are guarded by the lease token. */
export class JobStore {
  /** The sweeper's queries over many jobs. */
  readonly sweeps: JobSweeps;

  constructor(
    readonly pool: Pool,
    private readonly keys: KeyRing,
    readonly policy: RetentionPolicy,
    /** The format blobs are written in (config DNC_JOB_BLOB_FORMAT); every format is read. */
    private readonly blobFormat: BlobFormat = BLOB_FORMAT.framed,
  ) {
    this.sweeps = new JobSweeps(pool, policy);
  }

  /**
   * Store a new job (`queued`) and its encrypted input in one transaction. Idempotent by job id: a
   * second submit returns the stored job and stores nothing. `created: false` for a replay.
   */
  async submit(input: {
    jobId: string;
    orgId: string;
    country: string;
    reservationId: string;
    /** Number of inputs, and the durable input (a JSON array of the phones, in order). */
    count: number;
    input: Iterable<string | Buffer>;
    /** The last moment (epoch ms) a new job may be committed; past it nothing is stored (CallerGone). */
    storeBy?: number;
  }): Promise<{ job: JobRow; created: boolean }> {
    const existing = await this.find(input.jobId);
    if (existing) return { job: existing, created: false };
    const storeBy = input.storeBy ?? Number.POSITIVE_INFINITY;
    if (Date.now() > storeBy) throw new CallerGone();
    try {
      return await inTransaction(this.pool, async (client) => {
        await client.query(LOCK_ID, [input.jobId]);
        const fenced = await client.query('SELECT 1 FROM jobs.fenced_jobs WHERE job_id = $1', [input.jobId]);
        if (fenced.rowCount) throw new JobFenced();
        const r = await client.query(
          `INSERT INTO jobs.jobs (id, org_id, country, status, submitted_count, reservation_id, hard_cap_at)
           VALUES ($1, $2, $3, 'queued', $4, $5, now() + make_interval(secs => $6))
           RETURNING *`,
          [
            input.jobId,
            input.orgId,
            input.country,
            input.count,
            input.reservationId,
            this.policy.hardCapSeconds,
          ],
        );
        await client.query(
          `INSERT INTO jobs.job_transitions (job_id, status, note) VALUES ($1, 'queued', 'admitted')`,
          [input.jobId],
        );
        await writeBlob(
          client,
          this.keys,
          { jobId: input.jobId, orgId: input.orgId, kind: 'input' },
          input.input,
          this.blobFormat,
        );
        // Checked last, before the commit: the input's write may have taken the time that was left.
        if (Date.now() > storeBy) throw new CallerGone();
        return { job: toRow(r.rows[0] as Raw), created: true };
      });
    } catch (error) {
      // 23505: the same job id submitted concurrently; the first one won.
      if ((error as { code?: string }).code === '23505') {
        const job = await this.find(input.jobId);
        if (job) return { job, created: false };
      }
      throw error;
    }
  }

  /**
   * The job of an unresolved admission: the stored job, or (none stored) the id fenced for good, so a
   * SubmitJob still on its way is refused (issue 14: the reservation can then be released safely).
   */
  async fence(jobId: string): Promise<JobRow | undefined> {
    return inTransaction(this.pool, async (client) => {
      await client.query(LOCK_ID, [jobId]);
      const r = await client.query('SELECT * FROM jobs.jobs WHERE id = $1', [jobId]);
      if (r.rows[0]) return toRow(r.rows[0] as Raw);
      await client.query('INSERT INTO jobs.fenced_jobs (job_id) VALUES ($1) ON CONFLICT DO NOTHING', [jobId]);
      return undefined;
    });
  }

  async find(jobId: string): Promise<JobRow | undefined> {
    if (!isJobId(jobId)) return undefined;
    const r = await this.pool.query('SELECT * FROM jobs.jobs WHERE id = $1', [jobId]);
    return r.rows[0] ? toRow(r.rows[0] as Raw) : undefined;
  }

  /** A job of this organization; another organization's job is as absent as a missing one. */
  /** The database's clock: the one retention and the hard cap are due by. */
  async databaseNow(): Promise<Date> {
    const r = await this.pool.query<{ now: Date }>('SELECT now() AS now');
    return r.rows[0]!.now;
  }

  async findForOrg(orgId: string, jobId: string): Promise<JobRow | undefined> {
    const job = await this.find(jobId);
    return job && job.orgId === orgId ? job : undefined;
  }

  async list(orgId: string, status: JobStatus | undefined, limit: number): Promise<JobRow[]> {
    const r = await this.pool.query(
      `SELECT * FROM jobs.jobs WHERE org_id = $1 AND ($2::text IS NULL OR status = $2)
       ORDER BY created_at DESC LIMIT $3`,
      [orgId, status ?? null, limit],
    );
    return r.rows.map((x) => toRow(x as Raw));
  }

  async history(jobId: string): Promise<{ status: string; at: Date; note: string }[]> {
    const r = await this.pool.query<{ status: string; at: Date; note: string }>(
      'SELECT status, at, note FROM jobs.job_transitions WHERE job_id = $1 ORDER BY seq',
      [jobId],
    );
    return r.rows;
  }

  /**
   * A queued job whose work message was spent (never delivered again): not dispatched any more, so the
   * sweeper publishes it again (under a new message id). True when it was such a job.
   */
  async markSpent(jobId: string): Promise<boolean> {
    if (!isJobId(jobId)) return false;
    const r = await this.pool.query(
      `UPDATE jobs.jobs SET dispatched_at = NULL WHERE id = $1 AND status = 'queued' AND dispatched_at IS NOT NULL`,
      [jobId],
    );
    return r.rowCount === 1;
  }

  async markDispatched(jobId: string): Promise<void> {
    await this.pool.query(
      `UPDATE jobs.jobs SET dispatched_at = now(), dispatch_count = dispatch_count + 1 WHERE id = $1`,
      [jobId],
    );
  }

  /** Claim a job for one execution attempt with a new lease token (claim.ts says when it can). */
  async claim(jobId: string, leaseMs: number, maxAttempts: number): Promise<Claim> {
    if (!isJobId(jobId)) return { kind: 'gone' };
    return inTransaction(this.pool, (client) =>
      claimLocked(client, this.policy, jobId, leaseMs, maxAttempts),
    );
  }

  /** Extend the lease; `lost` when another owner or a terminal state took the job. */
  async renewLease(
    jobId: string,
    token: string,
    leaseMs: number,
  ): Promise<{ lost: boolean; cancelRequested: boolean }> {
    const r = await this.pool.query<{ cancel_requested: boolean }>(
      `UPDATE jobs.jobs SET lease_expires_at = now() + make_interval(secs => $3)
       WHERE id = $1 AND lease_token = $2 AND status = 'running' RETURNING cancel_requested`,
      [jobId, token, leaseMs / 1000],
    );
    const row = r.rows[0];
    return row
      ? { lost: false, cancelRequested: row.cancel_requested }
      : { lost: true, cancelRequested: false };
  }

  /** A job's input size (plaintext bytes, inputs), read before it is claimed: what running it costs. */
  async inputSize(jobId: string): Promise<{ bytes: number; count: number } | undefined> {
    if (!isJobId(jobId)) return undefined;
    const r = await this.pool.query<{ submitted_count: number; byte_length: number | null }>(
      `SELECT j.submitted_count, b.byte_length FROM jobs.jobs j
       LEFT JOIN jobs.job_blobs b ON b.job_id = j.id AND b.kind = 'input' WHERE j.id = $1`,
      [jobId],
    );
    const row = r.rows[0];
    return row ? { count: row.submitted_count, bytes: Number(row.byte_length ?? 0) } : undefined;
  }

  /** Before an adapter call: counted as in flight, unless the lease is gone or cancel was requested. */
  async beginExternalCall(jobId: string, token: string): Promise<boolean> {
    const r = await this.pool.query(
      `UPDATE jobs.jobs SET external_calls = external_calls + 1
       WHERE id = $1 AND lease_token = $2 AND status = 'running' AND NOT cancel_requested`,
      [jobId, token],
    );
    return r.rowCount === 1;
  }

  async endExternalCall(jobId: string, token: string): Promise<{ lost: boolean; cancelRequested: boolean }> {
    const r = await this.pool.query<{ cancel_requested: boolean }>(
      `UPDATE jobs.jobs SET external_calls = GREATEST(0, external_calls - 1)
       WHERE id = $1 AND lease_token = $2 AND status = 'running' RETURNING cancel_requested`,
      [jobId, token],
    );
    const row = r.rows[0];
    return row
      ? { lost: false, cancelRequested: row.cancel_requested }
      : { lost: true, cancelRequested: false };
  }

  /**
   * Give the lease back, and the execution does not count against DNC_JOB_MAX_ATTEMPTS: this worker is
   * shutting down, which says nothing about the job. Counted, a rolling deploy's stops (each worker's
   * jobs resumed by the next, often stopped in turn) ended a job that never failed once it had been
   * stopped DNC_JOB_MAX_ATTEMPTS times. A job that ends its worker some other way (a crash, a kill)
   * still counts, and the hard cap bounds every job whatever its executions.
   */
  async handBack(jobId: string, token: string): Promise<void> {
    await this.pool.query(
      `UPDATE jobs.jobs SET lease_expires_at = now(), external_calls = 0, handed_back = handed_back + 1
       WHERE id = $1 AND lease_token = $2 AND status = 'running'`,
      [jobId, token],
    );
  }

  /** Give the lease back early (the attempt failed for a passing reason): the next delivery may claim. */
  async releaseLease(jobId: string, token: string): Promise<void> {
    await this.pool.query(
      `UPDATE jobs.jobs SET lease_expires_at = now(), external_calls = 0
       WHERE id = $1 AND lease_token = $2 AND status = 'running'`,
      [jobId, token],
    );
  }

  /**
   * The worker's final step: the encrypted result, input purge, `succeeded`, quota marked for commit,
   * all in one transaction and only under the current lease. A cancel requested meanwhile wins: the
   * result is discarded and the job becomes `cancelled` (final-write.ts).
   */
  complete(
    jobId: string,
    token: string,
    resultPieces: () => Iterable<string | Buffer>,
    registrySnapshotAt?: Date,
  ): Promise<FinalWrite> {
    const store = { pool: this.pool, keys: this.keys, policy: this.policy, blobFormat: this.blobFormat };
    return writeFinal(store, jobId, token, resultPieces, registrySnapshotAt);
  }

  /** The worker's failure step, under the current lease. A requested cancel still ends as `cancelled`. */
  async fail(jobId: string, token: string, cause: FailureCause): Promise<JobRow | undefined> {
    return inTransaction(this.pool, async (client) => {
      const job = await lockLeased(client, jobId, token);
      if (!job) return undefined;
      const expired = await expireIfPastCap(client, this.policy, job);
      if (expired) return expired;
      if (job.cancelRequested)
        return terminalizeLocked(client, this.policy, job, {
          to: 'cancelled',
          note: 'cancelled; attempt discarded',
        });
      const retryAfterSeconds =
        cause.kind === 'maintenance' || cause.kind === 'country_unavailable' ? cause.retryAfterSeconds : 0;
      return terminalizeLocked(client, this.policy, job, {
        to: 'failed',
        error: publicJobError(cause),
        retryAfterSeconds,
        note: `failed: ${cause.kind}`,
      });
    });
  }

  /** The worker saw the cancel request once its in-flight calls returned. */
  async finishCancelled(jobId: string, token: string): Promise<JobRow | undefined> {
    return inTransaction(this.pool, async (client) => {
      const job = await lockLeased(client, jobId, token);
      if (!job) return undefined;
      return (
        (await expireIfPastCap(client, this.policy, job)) ??
        terminalizeLocked(client, this.policy, job, {
          to: 'cancelled',
          note: 'cancelled after the in-flight registry call was reconciled',
        })
      );
    });
  }

  /** Cancel by the States table. `job` is the state after the request. */
  /**
   * Cancel a job of `orgId`: what was decided, the job after it, and whether this call changed anything
   * (`changed`: cancelled now, or a cancel requested for the first time).
   */
  async cancel(
    orgId: string,
    jobId: string,
  ): Promise<{ decision: CancelDecision; job: JobRow; changed: boolean; expired?: true } | undefined> {
    if (!isJobId(jobId)) return undefined;
    return inTransaction(this.pool, async (client) => {
      const r = await client.query(
        `SELECT *, lease_expires_at > clock_timestamp() AS lease_live FROM jobs.jobs
         WHERE id = $1 AND org_id = $2 FOR NO KEY UPDATE`,
        [jobId, orgId],
      );
      if (!r.rows[0]) return undefined;
      const job = toRow(r.rows[0] as Raw);
      // Past its hard cap (the sweep not there yet): it ended `expired` (spec, States), whatever a cancel
      // says after that; a cancel is never what ends it.
      if (job.status === 'queued' || job.status === 'running') {
        const expired = await expireIfPastCap(client, this.policy, job);
        if (expired) {
          const decision = { kind: 'keep_terminal', state: 'expired' } as const;
          return { decision, job: expired, changed: false, expired: true };
        }
      }
      // A lease holder that vanished, or whose lease ran out (stopped, dead: nobody reconciles its calls,
      // and whatever they answer is refused), has no call in flight any more.
      const calls = job.leaseToken && r.rows[0].lease_live ? job.externalCalls : 0;
      const decision = decideCancel(job.status, calls);
      if (decision.kind === 'keep_terminal') return { decision, job, changed: false };
      if (decision.kind === 'cancel_now') {
        const done = await terminalizeLocked(client, this.policy, job, {
          to: 'cancelled',
          note: 'cancelled by the client',
        });
        return { decision, job: done, changed: true };
      }
      if (job.cancelRequested) return { decision, job, changed: false };
      const u = await client.query('UPDATE jobs.jobs SET cancel_requested = true WHERE id = $1 RETURNING *', [
        jobId,
      ]);
      await client.query(
        `INSERT INTO jobs.job_transitions (job_id, status, note)
         VALUES ($1, 'running', 'cancel accepted; waiting for the in-flight registry call')`,
        [jobId],
      );
      return { decision, job: toRow(u.rows[0] as Raw), changed: true };
    });
  }
}
