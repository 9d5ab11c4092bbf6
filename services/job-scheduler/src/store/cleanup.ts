import type { Pool } from '@dnc/kit';
import { purgeBlob } from './blobs.js';

export type CleanupTarget = 'input' | 'result' | 'metadata';

export interface CleanupTaskRow {
  jobId: string;
  target: CleanupTarget;
  dueAt: Date;
  attempts: number;
  lastError: string;
}

/**
 * Retention work. A task is removed only once its target is verified absent; a failure keeps it,
 * counts the attempt, records the error class (never data) and retries with backoff.
 */
export class CleanupStore {
  constructor(private readonly pool: Pool) {}

  async due(limit = 100): Promise<CleanupTaskRow[]> {
    const r = await this.pool.query(
      `SELECT job_id, target, due_at, attempts, last_error FROM jobs.cleanup_tasks
       WHERE due_at <= now() ORDER BY due_at LIMIT $1`,
      [limit],
    );
    return r.rows.map((x) => ({
      jobId: x.job_id as string,
      target: x.target as CleanupTarget,
      dueAt: x.due_at as Date,
      attempts: x.attempts as number,
      lastError: x.last_error as string,
    }));
  }

  /** Purge one target and verify it is gone; true when the task is done. */
  async run(task: CleanupTaskRow): Promise<boolean> {
    if (task.target === 'metadata') {
      await this.pool.query('DELETE FROM jobs.jobs WHERE id = $1', [task.jobId]);
      const left = await this.pool.query(
        `SELECT (SELECT count(*) FROM jobs.jobs WHERE id = $1)
              + (SELECT count(*) FROM jobs.job_blobs WHERE job_id = $1)
              + (SELECT count(*) FROM jobs.job_blob_segments WHERE job_id = $1)
              + (SELECT count(*) FROM jobs.job_transitions WHERE job_id = $1) AS n`,
        [task.jobId],
      );
      if (Number(left.rows[0]?.n ?? 1) !== 0) return false;
      // Metadata gone: no other retention work of this job is left to do.
      await this.pool.query('DELETE FROM jobs.cleanup_tasks WHERE job_id = $1', [task.jobId]);
      return true;
    }
    const absent = await purgeBlob(this.pool, task.jobId, task.target);
    if (!absent) return false;
    const column = task.target === 'input' ? 'input_purged_at' : 'result_purged_at';
    await this.pool.query(`UPDATE jobs.jobs SET ${column} = COALESCE(${column}, now()) WHERE id = $1`, [
      task.jobId,
    ]);
    await this.pool.query('DELETE FROM jobs.cleanup_tasks WHERE job_id = $1 AND target = $2', [
      task.jobId,
      task.target,
    ]);
    return true;
  }

  async recordFailure(task: CleanupTaskRow, errorClass: string): Promise<void> {
    await this.pool.query(
      `UPDATE jobs.cleanup_tasks SET attempts = attempts + 1, last_error = $3,
         due_at = now() + make_interval(secs => LEAST(300, power(2, LEAST(attempts, 8))::int))
       WHERE job_id = $1 AND target = $2`,
      [task.jobId, task.target, errorClass.slice(0, 200)],
    );
  }

  async status(limit = 100): Promise<{ pending: number; failed: number; tasks: CleanupTaskRow[] }> {
    const counts = await this.pool.query<{ pending: number; failed: number }>(
      `SELECT count(*) FILTER (WHERE due_at <= now())::int AS pending,
              count(*) FILTER (WHERE attempts > 0)::int AS failed
       FROM jobs.cleanup_tasks`,
    );
    const r = await this.pool.query(
      `SELECT job_id, target, due_at, attempts, last_error FROM jobs.cleanup_tasks
       WHERE due_at <= now() OR attempts > 0 ORDER BY due_at LIMIT $1`,
      [limit],
    );
    return {
      pending: counts.rows[0]?.pending ?? 0,
      failed: counts.rows[0]?.failed ?? 0,
      tasks: r.rows.map((x) => ({
        jobId: x.job_id as string,
        target: x.target as CleanupTarget,
        dueAt: x.due_at as Date,
        attempts: x.attempts as number,
        lastError: x.last_error as string,
      })),
    };
  }
}
