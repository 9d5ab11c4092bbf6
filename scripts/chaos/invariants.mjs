// After every scenario: drain (every accepted job terminal) and the money and data invariants, read
// from outside as a customer and an operator would: nothing reserved, used = what the ledger says.
import { admin, quotaOf } from '../reliability/stack.mjs';
import { drainJobs } from './traffic.mjs';
import { COUNTRY } from './world.mjs';

export async function finalInvariants(world, ledger) {
  const failures = [];
  const active = await drainJobs(world, ledger, 180_000);
  if (active.length) failures.push(`${active.length} accepted jobs not terminal after the drain`);
  const orgs = new Map();
  for (const o of world.orgs) orgs.set(o.orgId, o);
  for (const j of ledger.jobs.values()) orgs.set(j.org.orgId, j.org);
  for (const orgId of ledger.v1.keys()) if (!orgs.has(orgId)) orgs.set(orgId, { orgId });
  let checked = 0;
  for (const org of orgs.values()) {
    const q = await quotaOf(world.stack, org.orgId, COUNTRY);
    const jobs = [...ledger.jobs.values()].filter(
      (j) => j.org.orgId === org.orgId && j.status === 'succeeded',
    );
    const expected = (ledger.v1.get(org.orgId) ?? 0) + jobs.reduce((s, j) => s + j.count, 0);
    if (q.reserved !== 0) failures.push(`org ${org.orgId.slice(0, 8)}: ${q.reserved} still reserved`);
    if (q.used !== expected)
      failures.push(`org ${org.orgId.slice(0, 8)}: used ${q.used}, the answers account for ${expected}`);
    checked++;
  }
  failures.push(...ledger.wrong);
  const status = await admin(world.stack, 'jobs cleanup-status').catch(() => undefined);
  const byStatus = {};
  for (const j of ledger.jobs.values()) byStatus[j.status] = (byStatus[j.status] ?? 0) + 1;
  return {
    scenario: 'invariants after the drain',
    faults: '-',
    requests: 0,
    jobs: ledger.jobs.size,
    pass: failures.length === 0,
    figures: `${checked} organizations' quota; jobs ${Object.entries(byStatus)
      .map(([k, v]) => `${v} ${k}`)
      .join(', ')}; cleanup ${JSON.stringify(status ?? {})}`,
    failures,
  };
}
