import type pg from 'pg';
import type { Violation } from '../invariants.js';

/**
 * What the jobs schema must look like once a stack has drained (spec: States, input handling; issue 14
 * "an invariant checker"): every accepted job terminal, a complete result only for a succeeded job and
 * at most one, no input ciphertext or data key left for a terminal job, no result after its purge.
 * Only ids, states and counts go into a violation.
 */
export async function jobViolations(db: pg.Client): Promise<Violation[]> {
  const out: Violation[] = [];
  const active = await db.query<{ id: string; status: string }>(
    `SELECT id, status FROM jobs.jobs WHERE status IN ('queued', 'running') ORDER BY created_at`,
  );
  for (const j of active.rows)
    out.push({ invariant: 'job_terminal', detail: `job ${j.id} is still ${j.status}` });

  // At most one result per job is the primary key of job_blobs; its segments must be all there.
  const results = await db.query<{
    id: string;
    status: string;
    purged: boolean;
    has_result: boolean;
    expected: number | null;
    segments: number;
  }>(
    `SELECT j.id, j.status, j.result_purged_at IS NOT NULL AS purged, b.job_id IS NOT NULL AS has_result,
            b.segment_count AS expected,
            (SELECT count(*) FROM jobs.job_blob_segments s WHERE s.job_id = j.id AND s.kind = 'result')::int
              AS segments
     FROM jobs.jobs j LEFT JOIN jobs.job_blobs b ON b.job_id = j.id AND b.kind = 'result'`,
  );
  for (const r of results.rows) {
    const problem =
      r.status !== 'succeeded' && (r.has_result || r.segments > 0)
        ? `is ${r.status} but has a result`
        : r.status === 'succeeded' && r.purged && (r.has_result || r.segments > 0)
          ? 'keeps its result after the purge'
          : r.status === 'succeeded' && !r.purged && !r.has_result
            ? 'succeeded without a result'
            : r.has_result && r.segments !== r.expected
              ? `has an incomplete result (${r.segments} of ${r.expected} segments)`
              : undefined;
    if (problem) out.push({ invariant: 'job_result', detail: `job ${r.id} ${problem}` });
  }

  const inputs = await db.query<{ id: string; status: string; keys: number; segments: number }>(
    `SELECT j.id, j.status,
            (SELECT count(*) FROM jobs.job_blobs b WHERE b.job_id = j.id AND b.kind = 'input')::int AS keys,
            (SELECT count(*) FROM jobs.job_blob_segments s WHERE s.job_id = j.id AND s.kind = 'input')::int
              AS segments
     FROM jobs.jobs j WHERE j.status NOT IN ('queued', 'running')`,
  );
  for (const r of inputs.rows) {
    if (r.keys + r.segments > 0)
      out.push({
        invariant: 'input_purged',
        detail: `job ${r.id} is ${r.status} but keeps ${r.keys} input data key(s) and ${r.segments} segment(s)`,
      });
  }
  const orphans = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM jobs.job_blobs b WHERE NOT EXISTS (SELECT 1 FROM jobs.jobs j WHERE j.id = b.job_id)`,
  );
  if ((orphans.rows[0]?.n ?? 0) > 0)
    out.push({
      invariant: 'input_purged',
      detail: `${orphans.rows[0]!.n} blob(s) of jobs that no longer exist`,
    });
  return out;
}

/** Distinct terminal-state history: a job never leaves a terminal state once reached. */
export async function transitionViolations(db: pg.Client): Promise<Violation[]> {
  const r = await db.query<{ job_id: string; n: number }>(
    `SELECT job_id, count(*)::int AS n FROM jobs.job_transitions
     WHERE status IN ('succeeded', 'failed', 'cancelled', 'expired') GROUP BY job_id HAVING count(*) > 1`,
  );
  return r.rows.map((x) => ({
    invariant: 'job_terminal',
    detail: `job ${x.job_id} reached a terminal state ${x.n} times`,
  }));
}
