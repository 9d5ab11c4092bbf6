import type pg from 'pg';
import type { Violation } from '../invariants.js';

// Usage kinds of the ledger (quota.v1.UsageKind) and of idempotency claims (admission).
const SYNC = 1;
const JOB = 2;

// What admission and the scheduler know of reservation r (a stack may run without either store).
const CLAIM_OF = `(SELECT c.state || ' ' || extract(epoch FROM now() - c.claimed_at)::int || ' s'
  FROM admission.idempotency_records c WHERE c.admission_id::text = r.reservation_id)`;
const JOB_OF = `(SELECT j.status || ' settlement ' || coalesce(j.quota_settlement, '-') ||
  CASE WHEN j.quota_settled_at IS NULL THEN ' unsettled'
       ELSE ' settled ' || extract(epoch FROM now() - j.quota_settled_at)::int || ' s ago' END
  FROM jobs.jobs j WHERE j.reservation_id = r.reservation_id)`;
const FENCED = `EXISTS (SELECT 1 FROM admission.idempotency_records c JOIN jobs.fenced_jobs f ON f.job_id = c.job_id
  WHERE c.admission_id::text = r.reservation_id)`;

/**
 * The quota ledger once every request has ended (spec: "exactly one charge for a completed logical
 * request, nothing for a failed one"): nothing reserved, `used` equal to the committed amounts and to
 * the usage records, one usage record per committed reservation.
 */
export async function ledgerViolations(
  db: pg.Client,
  present: { admission: boolean; jobs: boolean },
): Promise<Violation[]> {
  const out: Violation[] = [];
  // With what the other stores know of it (its admission's claim, its job, a fence), so that a
  // reservation left open names the path that left it.
  const open = await db.query<{
    reservation_id: string;
    kind: number;
    age_s: number;
    claim: string | null;
    job: string | null;
    fenced: boolean;
  }>(
    `SELECT r.reservation_id, r.kind, extract(epoch FROM now() - r.created_at)::int AS age_s,
       ${present.admission ? CLAIM_OF : 'NULL::text'} AS claim,
       ${present.jobs ? JOB_OF : 'NULL::text'} AS job,
       ${present.admission && present.jobs ? FENCED : 'false'} AS fenced
     FROM quota.reservations r WHERE r.state = 'reserved' ORDER BY r.created_at`,
  );
  for (const r of open.rows)
    out.push({
      invariant: 'quota_reserved',
      detail: `${r.kind === JOB ? 'job' : r.kind === SYNC ? 'v1' : `kind ${r.kind}`} reservation ${r.reservation_id} still open after ${r.age_s} s (claim: ${r.claim ?? 'none'}; job: ${r.job ?? 'none'}${r.fenced ? '; job id fenced' : ''})`,
    });
  const accounts = await db.query<{
    org_id: string;
    country: string;
    period: string;
    used: number;
    reserved: number;
    committed: number;
    open: number;
    recorded: number;
    records: number;
    committed_n: number;
  }>(
    `SELECT a.org_id, a.country, a.period, a.used::float8 AS used, a.reserved::float8 AS reserved,
       coalesce((SELECT sum(amount) FROM quota.reservations r WHERE (r.org_id, r.country, r.period)
                 = (a.org_id, a.country, a.period) AND r.state = 'committed'), 0)::float8 AS committed,
       coalesce((SELECT sum(amount) FROM quota.reservations r WHERE (r.org_id, r.country, r.period)
                 = (a.org_id, a.country, a.period) AND r.state = 'reserved'), 0)::float8 AS open,
       coalesce((SELECT sum(count) FROM quota.usage_records u WHERE (u.org_id, u.country, u.period)
                 = (a.org_id, a.country, a.period)), 0)::float8 AS recorded,
       (SELECT count(*) FROM quota.usage_records u WHERE (u.org_id, u.country, u.period)
                 = (a.org_id, a.country, a.period))::int AS records,
       (SELECT count(*) FROM quota.reservations r WHERE (r.org_id, r.country, r.period)
                 = (a.org_id, a.country, a.period) AND r.state = 'committed')::int AS committed_n
     FROM quota.accounts a ORDER BY a.org_id, a.country, a.period`,
  );
  for (const a of accounts.rows) {
    const account = `account ${a.org_id}/${a.country}/${a.period}`;
    if (a.reserved !== 0)
      out.push({ invariant: 'quota_reserved', detail: `${account}: reserved ${a.reserved}, expected 0` });
    if (a.reserved !== a.open)
      out.push({
        invariant: 'quota_used',
        detail: `${account}: reserved ${a.reserved} but open reservations sum to ${a.open}`,
      });
    if (a.used !== a.committed || a.used !== a.recorded)
      out.push({
        invariant: 'quota_used',
        detail: `${account}: used ${a.used}, committed reservations ${a.committed}, usage records ${a.recorded}`,
      });
    if (a.records !== a.committed_n)
      out.push({
        invariant: 'quota_used',
        detail: `${account}: ${a.records} usage record(s) for ${a.committed_n} committed reservation(s)`,
      });
  }
  return out;
}

/**
 * Each terminal job settled its own reservation exactly as its outcome says: committed for the
 * submitted count when it succeeded, released otherwise (no charge for a failed job, none missed for
 * a successful one).
 */
export async function settlementViolations(db: pg.Client): Promise<Violation[]> {
  const r = await db.query<{
    id: string;
    status: string;
    submitted_count: number;
    settled: boolean;
    state: string | null;
    amount: number | null;
  }>(
    `SELECT j.id, j.status, j.submitted_count, j.quota_settled_at IS NOT NULL AS settled,
            r.state, r.amount::float8 AS amount
     FROM jobs.jobs j LEFT JOIN quota.reservations r ON r.reservation_id = j.reservation_id
     WHERE j.status NOT IN ('queued', 'running')`,
  );
  const out: Violation[] = [];
  for (const j of r.rows) {
    const expected = j.status === 'succeeded' ? 'committed' : 'released';
    let problem: string | undefined;
    if (!j.settled) problem = 'its reservation settlement is not confirmed';
    else if (j.state === null) problem = 'its reservation does not exist';
    else if (j.state !== expected) problem = `its reservation is ${j.state}, expected ${expected}`;
    else if (expected === 'committed' && j.amount !== j.submitted_count)
      problem = `it was charged ${j.amount} for ${j.submitted_count} inputs`;
    if (problem) out.push({ invariant: 'job_settled', detail: `job ${j.id} (${j.status}): ${problem}` });
  }
  return out;
}

/**
 * Idempotency against what was charged and stored (spec: Idempotency 2, 5, 8): one job per key — every
 * job is the job of an accepted claim and no claim of a job is left unresolved; a completed v1 request
 * was charged once, and every v1 charge belongs to a completed request.
 */
export async function idempotencyViolations(db: pg.Client, jobs: boolean): Promise<Violation[]> {
  const out: Violation[] = [];
  if (jobs) {
    const orphans = await db.query<{ id: string; status: string }>(
      `SELECT j.id, j.status FROM jobs.jobs j WHERE NOT EXISTS (
         SELECT 1 FROM admission.idempotency_records c
         WHERE c.admission_id::text = j.reservation_id AND c.job_id = j.id AND c.state = 'accepted')`,
    );
    for (const j of orphans.rows)
      out.push({
        invariant: 'one_job_per_key',
        detail: `job ${j.id} (${j.status}) is not the job of an accepted idempotency claim`,
      });
  }
  const unresolved = await db.query<{ admission_id: string; age_s: number }>(
    `SELECT admission_id, extract(epoch FROM now() - claimed_at)::int AS age_s
     FROM admission.idempotency_records WHERE kind = ${JOB} AND state = 'in_progress'`,
  );
  for (const c of unresolved.rows)
    out.push({
      invariant: 'one_job_per_key',
      detail: `v2 admission ${c.admission_id} unresolved after ${c.age_s} s (job neither confirmed nor given up)`,
    });
  const sync = await db.query<{ admission_id: string; claim: string | null; reservation: string | null }>(
    `SELECT coalesce(c.admission_id::text, r.reservation_id) AS admission_id, c.state AS claim,
            r.state AS reservation
     FROM (SELECT * FROM admission.idempotency_records WHERE kind = ${SYNC}) c
       FULL JOIN (SELECT * FROM quota.reservations WHERE kind = ${SYNC} AND state = 'committed') r
       ON r.reservation_id = c.admission_id::text
     WHERE (c.state = 'completed' AND r.state IS NULL) OR (r.state = 'committed' AND c.state IS DISTINCT FROM 'completed')`,
  );
  for (const s of sync.rows)
    out.push({
      invariant: 'one_charge_per_request',
      detail:
        s.claim === 'completed'
          ? `v1 request ${s.admission_id} completed without a charge`
          : `v1 charge ${s.admission_id} belongs to no completed request (claim ${s.claim ?? 'absent'})`,
    });
  return out;
}
