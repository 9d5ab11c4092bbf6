import type { JobStatus } from '@dnc/api-contract/limits';
import type { Pool } from '@dnc/kit';
import { type JobRow, type Raw, toRow } from './jobs.js';

/** Where a page of an organization's jobs ends: the last job's exact created_at (µs, UTC) and id. */
export interface JobCursor {
  /** `YYYY-MM-DDTHH:MM:SS.ffffffZ`: Postgres' own microseconds, which a JavaScript Date would round. */
  at: string;
  id: string;
}

/**
 * One page of an organization's jobs, newest first: keyset on (created_at, id) descending, so a page
 * starts right after the previous one's last job whatever was created meanwhile, ties on created_at
 * included. One row more than the page is read to know whether another page follows.
 */
export async function listJobPage(
  pool: Pool,
  orgId: string,
  status: JobStatus | undefined,
  limit: number,
  after: JobCursor | undefined,
): Promise<{ rows: JobRow[]; next: JobCursor | undefined }> {
  const r = await pool.query(
    `SELECT *, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at
     FROM jobs.jobs
     WHERE org_id = $1 AND ($2::text IS NULL OR status = $2)
       AND ($3::timestamptz IS NULL OR (created_at, id) < ($3::timestamptz, $4::uuid))
     ORDER BY created_at DESC, id DESC
     LIMIT $5`,
    [orgId, status ?? null, after?.at ?? null, after?.id ?? null, limit + 1],
  );
  const page = r.rows.slice(0, limit) as Raw[];
  const last = page[page.length - 1];
  const next =
    r.rows.length > limit && last ? { at: last['cursor_at'] as string, id: last['id'] as string } : undefined;
  return { rows: page.map(toRow), next };
}
