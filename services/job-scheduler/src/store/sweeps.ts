import { inTransaction, type Pool, type PoolClient } from '@dnc/kit';
import { type RetentionPolicy, resultPurgeDelaySeconds } from '../domain/states.js';
import { type JobRow, type Raw, toRow } from './job-row.js';
import { terminalizeLocked } from './terminalize.js';

/** A job a sweep could not end (its purge refused, a lock or statement timeout): left for the next one. */
export type EndFailed = (jobId: string, error: unknown) => void;

/**
 * Each job ended in a savepoint of its own. Found by a review (2026-12-03): one whose ending failed rolled
 * the whole batch back, and it came first again on every sweep (oldest first), so every other overdue job
 * stayed active past its cap, its input kept and its quota reserved.
 */
async function endEach(
  client: PoolClient,
  rows: unknown[],
  end: (job: JobRow) => Promise<JobRow>,
  failed: EndFailed | undefined,
): Promise<JobRow[]> {
  const out: JobRow[] = [];
  for (const raw of rows) {
    const job = toRow(raw as Raw);
    await client.query('SAVEPOINT end_job');
    try {
      out.push(await end(job));
      await client.query('RELEASE SAVEPOINT end_job');
    } catch (error) {
      await client.query('ROLLBACK TO SAVEPOINT end_job');
      failed?.(job.id, error);
    }
  }
  return out;
}

/**
 * The sweeper's reads and writes over many jobs: hard cap, cancels whose worker vanished, work messages
 * that may be missing, quota settlements still to make, fences past their retention, and the counts the
 * metrics show.
 */
export class JobSweeps {
  constructor(
    private readonly pool: Pool,
    private readonly policy: RetentionPolicy,
  ) {}

  /**
   * Active jobs past the hard cap (by the database's clock) become `expired` (job_expired), all of them
   * or only `jobId`. A job locked by its ending elsewhere is skipped: that ending applies the cap itself.
   * Returns the expired jobs. In a sweep (no `jobId`) a job whose ending fails is passed to `failed` and
   * over until the next sweep; for `jobId` the failure is thrown.
   */
  async expireOverdue(limit = 100, jobId?: string, failed?: EndFailed): Promise<JobRow[]> {
    return inTransaction(this.pool, async (client) => {
      const r = await client.query(
        `SELECT * FROM jobs.jobs WHERE status IN ('queued', 'running') AND hard_cap_at <= now()
           AND ($2::uuid IS NULL OR id = $2::uuid)
         ORDER BY hard_cap_at LIMIT $1 FOR NO KEY UPDATE SKIP LOCKED`,
        [limit, jobId ?? null],
      );
      const end = (job: JobRow) =>
        terminalizeLocked(client, this.policy, job, {
          to: 'expired',
          error: 'job_expired',
          note: 'hard cap reached',
        });
      if (jobId) return Promise.all(r.rows.map((raw) => end(toRow(raw as Raw))));
      return endEach(client, r.rows, end, failed);
    });
  }

  /**
   * The retention periods of the configuration, applied to what is stored: a period shortened since (a
   * country or legal requirement) brings forward the hard cap of active jobs and the purge of results
   * and metadata, which were dated when each job was created or ended. Never lengthened: what was
   * promised when the data was written stands. Found by a review (2026-12-03): a shortened result TTL
   * answered 410 while the sealed result stayed until its old date, up to 7 days.
   *
   * One exception, the deletion's grace past a result's retention (resultPurgeDelaySeconds): a purge
   * dated inside it, after the retention's end but before the grace's, is moved to the grace's end. The
   * result is answered 410 from the retention's end either way; only the deletion waits for downloads
   * begun before it. Results stored when the longest download was 60 s were dated 120 s past their
   * retention; with 15 minutes, a download begun in their last minutes was cut by the purge (2026-12-05).
   * Returns the counts.
   */
  async applyRetention(): Promise<{ hardCaps: number; purges: number; graces: number }> {
    const p = this.policy;
    const caps = await this.pool.query(
      `UPDATE jobs.jobs SET hard_cap_at = created_at + make_interval(secs => $1)
       WHERE status IN ('queued', 'running') AND hard_cap_at > created_at + make_interval(secs => $1)`,
      [p.hardCapSeconds],
    );
    const grace = resultPurgeDelaySeconds(p);
    const purges = await this.pool.query(
      `WITH due AS (
         SELECT t.job_id, t.target, t.due_at AS was, j.terminal_at + make_interval(secs =>
                  CASE t.target WHEN 'result' THEN $1::int ELSE $2::int END) AS at
         FROM jobs.cleanup_tasks t JOIN jobs.jobs j ON j.id = t.job_id
         WHERE t.target IN ('result', 'metadata') AND t.attempts = 0 AND j.terminal_at IS NOT NULL)
       UPDATE jobs.cleanup_tasks t SET due_at = due.at FROM due
       WHERE t.job_id = due.job_id AND t.target = due.target
         AND (t.due_at > due.at
              OR (t.target = 'result' AND t.due_at < due.at AND t.due_at >= due.at - make_interval(secs => $3)))
       RETURNING due.was < due.at AS grace`,
      [p.resultTtlSeconds + grace, p.metadataTtlSeconds, grace],
    );
    const graces = purges.rows.filter((r: { grace: boolean }) => r.grace).length;
    return { hardCaps: caps.rowCount ?? 0, purges: (purges.rowCount ?? 0) - graces, graces };
  }

  /** Running jobs whose worker vanished while a cancel was pending: the cancel completes now. */
  async reconcileStaleCancels(limit = 100, failed?: EndFailed): Promise<JobRow[]> {
    return inTransaction(this.pool, async (client) => {
      const r = await client.query(
        `SELECT * FROM jobs.jobs WHERE status = 'running' AND cancel_requested AND lease_expires_at < now()
         LIMIT $1 FOR NO KEY UPDATE SKIP LOCKED`,
        [limit],
      );
      const end = (job: JobRow) =>
        terminalizeLocked(client, this.policy, job, {
          to: 'cancelled',
          note: 'cancel reconciled after the worker was lost',
        });
      return endEach(client, r.rows, end, failed);
    });
  }

  /**
   * Jobs whose work message may be missing: queued and never confirmed as published, queued with a
   * dispatch older than `afterMs`, or running under a lease expired for longer than `afterMs`. Those the
   * sweeper always publishes come first: a queued job with a confirmed dispatch is published again only
   * when its country's queue holds fewer messages than jobs needing one, and a backlog of them filled
   * the batch, so a job never published or abandoned by its worker was not reached (a review, 2026-12-04).
   */
  async dispatchCandidates(afterMs: number, limit = 200): Promise<JobRow[]> {
    const r = await this.pool.query(
      `SELECT * FROM jobs.jobs
       WHERE (status = 'queued' AND dispatched_at IS NULL AND created_at < now() - interval '1 second')
          OR (status = 'queued' AND dispatched_at < now() - make_interval(secs => $1))
          OR (status = 'running' AND lease_expires_at < now() - make_interval(secs => $1)
              AND (dispatched_at IS NULL OR dispatched_at < now() - make_interval(secs => $1)))
       ORDER BY (status = 'queued' AND dispatched_at IS NOT NULL), created_at LIMIT $2`,
      [afterMs / 1000, limit],
    );
    return r.rows.map((x) => toRow(x as Raw));
  }

  /**
   * The jobs of a country that need a live work message: queued with a confirmed dispatch, or running
   * (its worker holds the message until the job ends; an attempt given back or a worker lost leaves it
   * waiting for its next delivery).
   */
  async needingMessages(country: string): Promise<number> {
    const r = await this.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs.jobs WHERE country = $1 AND status IN ('queued', 'running')
         AND (status = 'running' OR dispatched_at IS NOT NULL)`,
      [country],
    );
    return r.rows[0]?.n ?? 0;
  }

  /** Jobs whose quota settlement is still to make, the oldest first, but those that wait or whose account waits. */
  async unsettled(limit = 100): Promise<JobRow[]> {
    const r = await this.pool.query(
      `SELECT * FROM jobs.jobs j WHERE quota_settlement IS NOT NULL AND quota_settled_at IS NULL
       AND terminal_at < now() - interval '2 seconds'
       AND (j.settle_after IS NULL OR j.settle_after <= now())
       AND NOT EXISTS (SELECT 1 FROM jobs.settle_backoff b
                       WHERE b.org_id = j.org_id AND b.country = j.country AND b.until > now())
       ORDER BY terminal_at LIMIT $1`,
      [limit],
    );
    return r.rows.map((x) => toRow(x as Raw));
  }

  /** The accounts (`org_id/country`) whose last settlement failed: `waiting` while their wait lasts. */
  async settleBackoffs(): Promise<Map<string, { waiting: boolean }>> {
    const r = await this.pool.query<{ org_id: string; country: string; waiting: boolean }>(
      'SELECT org_id, country, until > now() AS waiting FROM jobs.settle_backoff',
    );
    return new Map(r.rows.map((b) => [`${b.org_id}/${b.country}`, { waiting: b.waiting }]));
  }

  /** A settlement of the account failed: its jobs wait, doubling from `baseMs` per failure, at most a minute. */
  async deferSettlements(job: JobRow, baseMs: number): Promise<void> {
    await this.pool.query(
      `INSERT INTO jobs.settle_backoff AS b (org_id, country, failures, until)
       VALUES ($1, $2, 1, now() + make_interval(secs => least($3::float8 * 2, greatest(60, $3::float8))))
       ON CONFLICT (org_id, country) DO UPDATE SET failures = b.failures + 1,
         until = now() + make_interval(secs => least($3::float8 * power(2, least(b.failures + 1, 16)), greatest(60, $3::float8)))`,
      [job.orgId, job.country, baseMs / 1000],
    );
  }

  /**
   * Settlements of the account failed and it is not known why (quota may be down for every account): its jobs
   * wait `ms`, its count of failures unchanged, a longer wait already set kept.
   */
  async holdSettlements(job: JobRow, ms: number): Promise<void> {
    await this.pool.query(
      `INSERT INTO jobs.settle_backoff AS b (org_id, country, failures, until)
       VALUES ($1, $2, 0, now() + make_interval(secs => $3::float8))
       ON CONFLICT (org_id, country) DO UPDATE SET until = greatest(b.until, excluded.until)`,
      [job.orgId, job.country, ms / 1000],
    );
  }

  /**
   * The settlement of this job alone failed (quota answered its account's others): it waits, doubling from
   * `baseMs` per failure, at most a minute; its account's other jobs do not.
   */
  async deferJobSettlement(jobId: string, baseMs: number): Promise<void> {
    await this.pool.query(
      `UPDATE jobs.jobs SET settle_failures = settle_failures + 1,
         settle_after = now() + make_interval(secs => least($2::float8 * power(2, least(settle_failures + 1, 16)), greatest(60, $2::float8)))
       WHERE id = $1 AND quota_settled_at IS NULL`,
      [jobId, baseMs / 1000],
    );
  }

  /** Waits that passed long ago (their jobs settled since, by a worker or another path): forgotten. */
  async forgetSettleBackoffs(): Promise<void> {
    await this.pool.query("DELETE FROM jobs.settle_backoff WHERE until < now() - interval '10 minutes'");
  }

  /** A settlement of the account succeeded: its jobs no longer wait. */
  async clearSettleBackoff(job: JobRow): Promise<void> {
    await this.pool.query('DELETE FROM jobs.settle_backoff WHERE org_id = $1 AND country = $2', [
      job.orgId,
      job.country,
    ]);
  }

  /** True when this call recorded it (another settler may have been first). */
  async markSettled(jobId: string): Promise<boolean> {
    const r = await this.pool.query(
      'UPDATE jobs.jobs SET quota_settled_at = now() WHERE id = $1 AND quota_settled_at IS NULL',
      [jobId],
    );
    return r.rowCount === 1;
  }

  /**
   * Fences older than `retentionSeconds` (the idempotency retention, DNC_IDEMPOTENCY_RETENTION_SECONDS):
   * a fenced id was an admission's job id, and no SubmitJob of it can still arrive once no idempotency
   * record could name it. A batch per tick; returns how many were purged.
   */
  async purgeFences(retentionSeconds: number, limit = 1_000): Promise<number> {
    const r = await this.pool.query(
      `DELETE FROM jobs.fenced_jobs WHERE job_id IN (
         SELECT job_id FROM jobs.fenced_jobs WHERE fenced_at < now() - make_interval(secs => $1)
         ORDER BY fenced_at LIMIT $2)`,
      [retentionSeconds, limit],
    );
    return r.rowCount ?? 0;
  }

  async countsByState(): Promise<{ states: Record<string, number>; nearHardCap: number }> {
    const r = await this.pool.query<{ status: string; n: number }>(
      'SELECT status, count(*)::int AS n FROM jobs.jobs GROUP BY status',
    );
    const near = await this.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs.jobs WHERE status IN ('queued', 'running')
       AND hard_cap_at < now() + make_interval(secs => $1)`,
      [Math.max(1, Math.floor(this.policy.hardCapSeconds / 12))],
    );
    return {
      states: Object.fromEntries(r.rows.map((x) => [x.status, x.n])),
      nearHardCap: near.rows[0]?.n ?? 0,
    };
  }
}
