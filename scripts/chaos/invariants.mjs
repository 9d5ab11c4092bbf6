// After every scenario: drain (every accepted job terminal), then the invariant checker of issue 14
// (packages/devstack/src/invariants.ts: the stores themselves) and what the customers saw: each
// organization's quota as the answers account for it, and no registered number answered safe.
import { checkInvariants, formatViolations, stackTarget } from '@dnc/devstack';
import { quotaOf } from '../reliability/stack.mjs';
import { CANARIES, drainJobs, retryUnanswered } from './traffic.mjs';
import { COUNTRY } from './world.mjs';

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
  return { failures, checked: orgs.size };
}

export async function finalInvariants(world, ledger) {
  const failures = [];
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
  const byStatus = {};
  for (const j of ledger.jobs.values()) byStatus[j.status] = (byStatus[j.status] ?? 0) + 1;
  return {
    scenario: 'invariants after the drain (issue 14 checker + answers)',
    faults: '-',
    requests: 0,
    jobs: ledger.jobs.size,
    pass: failures.length === 0,
    figures: `${violations.length} store violations; ${quota.checked} organizations' quota; ${unanswered} unanswered v1 retried (${retried.replayed} replayed: completed before); jobs ${Object.entries(
      byStatus,
    )
      .map(([k, v]) => `${v} ${k}`)
      .join(', ')}`,
    failures,
  };
}
