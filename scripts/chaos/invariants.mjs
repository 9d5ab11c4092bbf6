// After every scenario: drain (every accepted job terminal), then the invariant checker of issue 14
// (packages/devstack/src/invariants.ts: the stores themselves) and what the customers saw: each
// organization's quota as the answers account for it, and no registered number answered safe.
import { checkInvariants, formatViolations, stackTarget } from '@dnc/devstack';
import pg from 'pg';
import { quotaOf } from '../reliability/stack.mjs';
import { retryUnanswered, retryUnansweredJobs } from './retries.mjs';
import { CANARIES, drainJobs } from './traffic.mjs';
import { COUNTRY, keyMacOf } from './world.mjs';

/** Quota as the answers account for it: exact, or (for `loose` organizations) at most that much. */
async function answeredQuota(world, ledger) {
  const failures = [];
  const orgs = new Map();
  for (const o of world.orgs) orgs.set(o.orgId, o);
  for (const j of ledger.jobs.values()) orgs.set(j.org.orgId, j.org);
  for (const orgId of ledger.v1.keys()) if (!orgs.has(orgId)) orgs.set(orgId, { orgId });
  for (const org of orgs.values()) {
    const q = await quotaOf(world.stack, org.orgId, COUNTRY);
    const jobs = [...ledger.jobs.values()].filter(
      (j) => j.org.orgId === org.orgId && j.status === 'succeeded',
    );
    const expected = (ledger.v1.get(org.orgId) ?? 0) + jobs.reduce((s, j) => s + j.count, 0);
    const name = org.orgId.slice(0, 8);
    if (q.reserved !== 0) failures.push(`org ${name}: ${q.reserved} still reserved`);
    const most = expected + (ledger.loose.get(org.orgId) ?? 0);
    if (q.used < expected || q.used > most)
      failures.push(
        `org ${name}: used ${q.used}, the answers account for ${expected}${most > expected ? ` to ${most}` : ''}`,
      );
  }
  return { failures, checked: orgs.size, wrongOrgs: failures.map((f) => f.split(':')[0].slice(4)) };
}

const at = (ms) => new Date(ms).toISOString().slice(11, 23);

/** One ledger entry as a trace reads it (the key's first 8 characters; no numbers). */
const entryText = (e) =>
  `${e.how} ${e.kind} ${e.n} number(s) at ${at(e.at)}: ${e.status}${e.error ? ` ${e.error}` : ''}${e.replayed ? ' replayed' : ''}${e.retried ? ' (after the transport retried on a reused socket)' : ''}${e.charged ? ', charged' : ', not charged'}`;

/**
 * Where an organization's quota and the answers part: its usage records (admission id = reservation
 * id) with their idempotency claims, set against the ledger's v1 requests (by key hash) and succeeded
 * jobs (by job id). Names request keys by their first 8 characters, reservations by id; no numbers.
 */
export async function traceOrg(world, ledger, orgId) {
  const db = new pg.Client({ connectionString: world.stack.options.databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query(
      `SELECT u.reservation_id, u.count::int AS count, u.kind, u.created_at,
              encode(c.key_mac, 'hex') AS key_hash, c.state AS claim, c.job_id
       FROM quota.usage_records u
       LEFT JOIN admission.idempotency_records c ON c.admission_id::text = u.reservation_id
       WHERE u.org_id = $1 AND u.country = $2`,
      [orgId, COUNTRY],
    );
    const entries = ledger.requests.get(orgId) ?? [];
    const byHash = new Map();
    for (const e of entries) {
      const h = keyMacOf(world, e.idem).toString('hex');
      if (!byHash.has(h)) byHash.set(h, []);
      byHash.get(h).push(e);
    }
    const out = [];
    const recorded = new Set();
    for (const r of rows) {
      const where = `usage record ${r.reservation_id} (${r.count} at ${r.created_at.toISOString().slice(11, 23)}, claim ${r.claim ?? 'missing'})`;
      if (r.kind === 2) {
        const job = r.job_id ? ledger.jobs.get(r.job_id) : undefined;
        if (!job) out.push(`${where}: job ${r.job_id ?? '?'} is not in the ledger`);
        else if (job.status !== 'succeeded' || job.count !== r.count)
          out.push(`${where}: the ledger has job ${r.job_id} ${job.status}, ${job.count} submitted`);
        continue;
      }
      if (!r.key_hash) {
        out.push(`${where}: no idempotency claim to name its request`);
        continue;
      }
      recorded.add(r.key_hash);
      const seen = byHash.get(r.key_hash) ?? [];
      const charged = seen.filter((e) => e.charged);
      if (charged.length === 1 && charged[0].n === r.count) continue;
      out.push(
        `${where}: the ledger ${seen.length ? `has key ${seen[0].idem.slice(0, 8)}: ${seen.map(entryText).join(' -> ')}` : 'has no request with its key (not one of the traffic)'}`,
      );
    }
    for (const [h, seen] of byHash) {
      if (!recorded.has(h) && seen.some((e) => e.charged))
        out.push(
          `key ${seen[0].idem.slice(0, 8)} charged in the ledger, no usage record: ${seen.map(entryText).join(' -> ')}`,
        );
    }
    const unusual = entries.filter((e) => e.replayed || e.retried || e.status !== 200).length;
    out.push(
      `${entries.length} v1 requests in the ledger (${unusual} replayed, retried by the transport or not answered 200), ${rows.length} usage records`,
    );
    return out.map((line) => `org ${orgId.slice(0, 8)} trace: ${line}`);
  } finally {
    await db.end();
  }
}

export async function finalInvariants(world, ledger) {
  const failures = [];
  // v2 submissions whose client got no 202, retried with their key: the job each answers is drained.
  const unansweredJobs = ledger.unansweredJobs.length;
  const retriedJobs = await retryUnansweredJobs(world, ledger);
  failures.push(...retriedJobs.failures);
  const active = await drainJobs(world, ledger, 180_000);
  if (active.length) failures.push(`${active.length} accepted jobs not terminal after the drain`);
  // v1 requests whose client got no 200, retried with their key: a completed one replays free.
  const unanswered = ledger.unanswered.length;
  const retried = await retryUnanswered(world, ledger);
  failures.push(...retried.failures);
  // Abandoned v1 reservations are released by quota's sweeper after DNC_SYNC_RESERVATION_TTL_SECONDS.
  const violations = await checkInvariants(stackTarget(world.stack, CANARIES), { settleMs: 90_000 });
  if (violations.length) failures.push(...formatViolations(violations).split('\n'));
  // A v1 reservation abandoned by a killed process is released by quota's sweeper within its TTL.
  let quota = await answeredQuota(world, ledger);
  for (let i = 0; i < 12 && quota.failures.length > 0; i++) {
    await new Promise((r) => setTimeout(r, 5_000));
    quota = await answeredQuota(world, ledger);
  }
  failures.push(...quota.failures, ...ledger.wrong);
  for (const org of quota.wrongOrgs) {
    const orgId = [...ledger.requests.keys(), ...world.orgs.map((o) => o.orgId)].find((id) =>
      id.startsWith(org),
    );
    if (!orgId) continue;
    failures.push(
      ...(await traceOrg(world, ledger, orgId).catch((e) => [`org ${org}: no trace (${e.message})`])),
    );
  }
  // What the transport's retry on a reused socket met (the first attempt may have reached a gateway).
  const retriedEntries = [...ledger.requests.values()].flat().filter((e) => e.retried && e.how === 'traffic');
  const retriedText = retriedEntries.length
    ? `; ${retriedEntries.length} v1 answered after a transport retry (${[
        ...retriedEntries
          .reduce((m, e) => {
            const k = `${e.status}${e.error ? ` ${e.error}` : ''}${e.replayed ? ' replayed' : ''} (first: ${e.first})`;
            return m.set(k, (m.get(k) ?? 0) + 1);
          }, new Map())
          .entries(),
      ]
        .map(([k, n]) => `${n} x ${k}`)
        .join(', ')})`
    : '';
  const byStatus = {};
  for (const j of ledger.jobs.values()) byStatus[j.status] = (byStatus[j.status] ?? 0) + 1;
  return {
    scenario: 'invariants after the drain (issue 14 checker + answers)',
    faults: '-',
    requests: 0,
    jobs: ledger.jobs.size,
    pass: failures.length === 0,
    figures: `${violations.length} store violations; ${quota.checked} organizations' quota; ${unanswered} unanswered v1 retried (${retried.replayed} replayed: completed before); ${unansweredJobs} unanswered v2 retried (${retriedJobs.jobs} answered with a job); jobs ${Object.entries(
      byStatus,
    )
      .map(([k, v]) => `${v} ${k}`)
      .join(', ')}${retriedText}`,
    failures,
  };
}
