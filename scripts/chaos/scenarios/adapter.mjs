// S10 (adapter slow, hanging, reset, garbage through the fault proxies), S11 (cancel during in-flight
// calls), S12 (hard cap with a short configured cap and a hanging adapter).
import { randomUUID } from 'node:crypto';
import { api } from '../../reliability/http.mjs';
import { admin, quotaOf, sleep } from '../../reliability/stack.mjs';
import { ms } from '../probe.mjs';
import { drainJobs, phonesOf, startTraffic, TERMINAL } from '../traffic.mjs';
import { COUNTRY, scenarioOrg } from '../world.mjs';

/** Every adapter's fault proxy set to `fault` (applied once the promise settles). */
export const setAdapters = (world, fault) => Promise.all(world.adapterProxies.map((p) => p.setFault(fault)));

/**
 * Every Check of both adapters waits `latencyMs` in the adapter itself (an operator latency drill; 0
 * clears it): an adapter that never answers while its connections stay alive. A path that holds every
 * byte (the proxies' `hang`) is found dead by the kit's SessionProbe within 2.5 s and retried, so jobs
 * end `failed` before a 20 s cap; S12 is about the cap.
 */
async function drillAdapters(world, latencyMs) {
  for (const name of [`adapter-${COUNTRY}`, `adapter-${COUNTRY}#2`]) {
    const address = world.stack.processes.get(name).env.DNC_ADVERTISE_ADMIN_ADDR;
    const drill = latencyMs > 0 ? { 'latency-ms': latencyMs } : { clear: true };
    await admin(world.stack, 'adapter drill', { country: COUNTRY, address, ...drill });
  }
}

/** Country errors the spec documents for an adapter that fails; anything else is a failure. */
export const COUNTRY_ERRORS = new Set([
  'country_service_temporarily_unavailable',
  'country_service_maintenance',
]);

export async function s10AdapterFaults(world, ledger, { phaseS }) {
  const failures = [];
  const figures = [];
  let requests = 0;
  const faults = [{ kind: 'slow', delayMs: 400 }, { kind: 'hang' }, { kind: 'reset' }, { kind: 'garbage' }];
  for (const fault of faults) {
    const traffic = startTraffic(world, ledger, {
      concurrency: 6,
      pace: 20,
      kinds: ['v1 small', 'v1 small', 'v2 job', 'poll'],
    });
    // One replica first (callers must live with a bad one), then both.
    await world.adapterProxies[0].setFault(fault);
    await sleep((phaseS * 1000) / 2);
    await setAdapters(world, fault);
    await sleep((phaseS * 1000) / 2);
    await setAdapters(world, { kind: 'pass' });
    const t = await traffic.stop();
    requests += t.requests;
    const worst = Math.max(...(t.kinds.get('v1 small')?.ms ?? [0]));
    for (const f of t.fivexx)
      if (!(f.status === 503 && COUNTRY_ERRORS.has(f.code)))
        failures.push(`${fault.kind}: ${f.kind} answered ${f.status} ${f.code ?? ''}`);
    failures.push(...t.noAnswerLine(`${fault.kind}: `));
    if (worst > 17_000) failures.push(`${fault.kind}: a v1 request took ${ms(worst)} (budget 15 s)`);
    figures.push(`${fault.kind}: ${t.fivexx.length} 503, v1 max ${ms(worst)}`);
  }
  // Back to normal: the next requests succeed.
  const after = await startTraffic(world, ledger, { concurrency: 4, pace: 20, kinds: ['v1 small'] });
  await sleep(3_000);
  await sleep(2_000);
  const t = await after.stop();
  requests += t.requests;
  const recovered = t.kinds.get('v1 small')?.statuses.get(200) ?? 0;
  if (recovered < t.count('v1 small') * 0.9)
    failures.push(`after the faults only ${recovered} of ${t.count('v1 small')} v1 requests succeeded`);
  figures.push(
    `after: ${recovered}/${t.count('v1 small')} v1 200, max ${ms(Math.max(...(t.kinds.get('v1 small')?.ms ?? [0])))}`,
  );
  return {
    scenario: 'S10 adapter slow, hanging, reset, garbage',
    faults: faults.map((f) => f.kind).join(', '),
    requests,
    jobs: 0,
    pass: failures.length === 0,
    figures: figures.join('; '),
    failures: [...new Set(failures)],
  };
}

/**
 * An organization's quota once its jobs' settlements ran: a job is visible terminal first, then its
 * scheduler or worker releases (or commits) its reservation with quota, retried by the sweeper
 * (DNC_SWEEP_INTERVAL_MS, 1 s here) when that call fails. Read until nothing is reserved, for at most
 * `timeoutMs`; `used` must be 0 at every read (a cancelled or expired job is never charged).
 */
async function settledQuota(world, orgId, timeoutMs = 15_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const q = await quotaOf(world.stack, orgId, COUNTRY);
    if (q.used !== 0 || q.reserved === 0 || Date.now() > until) return q;
    await sleep(500);
  }
}

async function waitStatus(world, org, jobId, wanted, timeoutMs) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await api(world.publicBaseUrl, 'GET', `/v2/scrub/${jobId}`, { key: org.apiKey });
    if (r.status === 200 && wanted.includes(r.body.status)) return r.body;
    if (Date.now() > until) return r.body;
    await sleep(200);
  }
}

async function submit(world, ledger, org, n) {
  const idem = randomUUID();
  const res = await api(world.publicBaseUrl, 'POST', '/v2/scrub', {
    key: org.apiKey,
    idem,
    json: { country: COUNTRY, phones: phonesOf(n).phones },
  });
  if (res.status !== 202)
    throw new Error(`v2 submit answered ${res.status} ${res.body?.error ?? res.error ?? ''}`);
  ledger.accept(org, res.body, idem);
  return res.body.job_id;
}

/**
 * S11: jobs whose adapter call hangs are cancelled; the cancel is accepted at once and wins. The hang is
 * in the adapters (a latency drill, connections alive), as in S12: through the proxies' `hang` the
 * SessionProbe ends each call within 2.5 s and a cancel lands between retries instead of on a call.
 */
export async function s11CancelInFlight(world, ledger, { jobs = 4 }) {
  const org = await scenarioOrg(world, 'Chaos S11');
  const failures = [];
  // The jobs earlier scenarios left running first: under the drill each would hold a worker's slot for
  // the drill's 120 s, and S11's jobs would queue instead of calling (the full run after S10: none of
  // them running within 10 s, their cancels met no call).
  await drainJobs(world, ledger, 60_000);
  await drillAdapters(world, 120_000);
  const ids = [];
  let inFlight = 0;
  try {
    for (let i = 0; i < jobs; i++) ids.push(await submit(world, ledger, org, 300));
    for (const id of ids) {
      await waitStatus(world, org, id, ['running'], 10_000);
      const c = await api(world.publicBaseUrl, 'POST', `/v2/scrub/${id}/cancel`, { key: org.apiKey });
      if (c.status === 202 && c.body.cancel_requested) inFlight++;
      else if (!(c.status === 200 && c.body.status === 'cancelled'))
        failures.push(`cancel answered ${c.status} ${c.body?.status ?? c.body?.error}`);
    }
    await sleep(1_000);
  } finally {
    await drillAdapters(world, 0);
  }
  for (const id of ids) {
    const end = await waitStatus(world, org, id, [...TERMINAL], 30_000);
    ledger.jobs.get(id).status = end?.status;
    if (end?.status !== 'cancelled') failures.push(`a cancelled job ended ${end?.status}`);
  }
  const q = await settledQuota(world, org.orgId);
  if (q.used !== 0 || q.reserved !== 0)
    failures.push(`quota after cancels: used ${q.used}, reserved ${q.reserved}`);
  return {
    scenario: 'S11 cancel during in-flight adapter calls',
    faults: 'adapters never answering (latency drill)',
    requests: ids.length * 3,
    jobs: ids.length,
    pass: failures.length === 0 && inFlight > 0,
    figures: `${inFlight} of ${ids.length} cancels reconciled an in-flight call; quota used ${q.used}, reserved ${q.reserved}`,
    failures: inFlight > 0 ? failures : [...failures, 'no cancel met an in-flight call'],
  };
}

/** S12: a 20-second hard cap and an adapter that never answers: the jobs expire, quota released. */
export async function s12HardCap(world, ledger, { capS = 20 }) {
  const org = await scenarioOrg(world, 'Chaos S12');
  const failures = [];
  await world.restartJobs({ DNC_JOB_HARD_CAP_SECONDS: String(capS), DNC_ADAPTER_CALL_TIMEOUT_MS: '120000' });
  await drillAdapters(world, 120_000);
  const ids = [];
  try {
    for (let i = 0; i < 3; i++) ids.push(await submit(world, ledger, org, 200));
    for (const id of ids) {
      const end = await waitStatus(world, org, id, [...TERMINAL], (capS + 20) * 1000);
      ledger.jobs.get(id).status = end?.status;
      if (end?.status !== 'expired' || end?.error?.error !== 'job_expired')
        failures.push(`job ended ${end?.status} ${end?.error?.error ?? ''}`);
      const r = await api(world.publicBaseUrl, 'GET', `/v2/scrub/${id}/result`, { key: org.apiKey });
      if (r.status !== 410 || r.body?.error !== 'job_expired')
        failures.push(`result of an expired job answered ${r.status} ${r.body?.error}`);
    }
  } finally {
    await drillAdapters(world, 0);
    await world.restartJobs({ DNC_JOB_HARD_CAP_SECONDS: undefined, DNC_ADAPTER_CALL_TIMEOUT_MS: undefined });
  }
  const q = await settledQuota(world, org.orgId);
  if (q.used !== 0 || q.reserved !== 0)
    failures.push(`quota after expiry: used ${q.used}, reserved ${q.reserved}`);
  return {
    scenario: `S12 hard cap (${capS} s) with a hanging adapter`,
    faults: 'adapters never answering (latency drill)',
    requests: ids.length * 3,
    jobs: ids.length,
    pass: failures.length === 0,
    figures: `${ids.length} jobs expired with job_expired; quota used ${q.used}, reserved ${q.reserved}`,
    failures,
  };
}
