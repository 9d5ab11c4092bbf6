// S4 (kill -9 of a worker mid adapter call), S5 (kill of a gateway or an admission process between
// the idempotency claim and the job insert), S7 (forced redelivery and a worker stopped past its lease).
import { randomUUID } from 'node:crypto';
import { natsNames } from '@dnc/kit';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { api } from '../../reliability/http.mjs';
import { sleep } from '../../reliability/stack.mjs';
import { metric } from '../probe.mjs';
import { drainJobs, phonesOf, startTraffic } from '../traffic.mjs';
import { COUNTRY, scenarioOrg } from '../world.mjs';
import { COUNTRY_ERRORS, setAdapters } from './adapter.mjs';

const workers = (world) => [...world.stack.processes.keys()].filter((n) => n.startsWith('job-worker'));
const between = (a, b) => a + Math.random() * (b - a);

export async function s4WorkerKills(world, ledger, { seconds, minGapS, maxGapS }) {
  // Adapter calls slowed so a kill lands mid-call.
  await setAdapters(world, { kind: 'slow', delayMs: 300 });
  const traffic = startTraffic(world, ledger, {
    concurrency: 4,
    pace: 50,
    kinds: ['v2 job', 'v2 job', 'poll', 'v1 small'],
  });
  const t0 = Date.now();
  let kills = 0;
  try {
    while (Date.now() - t0 < seconds * 1000) {
      await sleep(between(minGapS, maxGapS) * 1000);
      const victim = workers(world)[Math.floor(Math.random() * workers(world).length)];
      await world.stack.kill(victim);
      kills++;
      await world.stack.start(victim);
    }
  } finally {
    await setAdapters(world, { kind: 'pass' });
  }
  const t = await traffic.stop();
  const active = await drainJobs(world, ledger, 90_000);
  // The adapters are slowed for the whole scenario: a v1 request whose Check does not come back
  // within its budget gets the documented 503 country_service_* with Retry-After (as S10 accepts for
  // the same fault). Any other 5xx, or that 503 without Retry-After, fails the scenario.
  const documented = (f) =>
    f.kind.startsWith('v1') && f.status === 503 && COUNTRY_ERRORS.has(f.code) && f.retryAfter != null;
  const failures = [
    ...t.fivexx
      .filter((f) => !documented(f))
      .map(
        (f) =>
          `${f.kind} answered ${f.status} ${f.code ?? ''}${f.retryAfter == null ? ' (no Retry-After)' : ''}`,
      ),
    ...(active.length ? [`${active.length} jobs not terminal 90 s after the last kill`] : []),
  ];
  const ended = [...ledger.jobs.values()].filter((j) => j.status === 'failed').length;
  const country503 = t.fivexx.filter(documented).length;
  return {
    scenario: 'S4 kill -9 of a worker mid adapter call',
    faults: `${kills} worker kills`,
    requests: t.requests,
    jobs: t.count('v2 job'),
    pass: failures.length === 0,
    figures: `${kills} kills in ${seconds} s; every job terminal; ${ended} failed so far in the run; ${country503} v1 503 country_service_*`,
    failures: [...new Set(failures)],
  };
}

/**
 * S5: the scheduler is stopped (SIGSTOP) so v2 requests wait after their idempotency claim, then the
 * gateway (first round) or the admission process (second round) serving them is killed. Every key,
 * retried, must end with exactly one job.
 */
export async function s5KillBetweenClaimAndInsert(world, ledger, { perRound = 6 }) {
  const org = await scenarioOrg(world, 'Chaos S5');
  const failures = [];
  let requests = 0;
  const keys = [];
  for (const victim of ['gateway', 'admission']) {
    const scheduler = world.stack.child('job-scheduler');
    scheduler.kill('SIGSTOP');
    const round = Array.from({ length: perRound }, () => ({
      idem: randomUUID(),
      phones: phonesOf(50).phones,
    }));
    // Straight to the first gateway (which talks to the first admission process).
    const pending = round.map((k) =>
      api(world.stack.addresses.gateways[0], 'POST', '/v2/scrub', {
        key: org.apiKey,
        idem: k.idem,
        json: { country: COUNTRY, phones: k.phones },
        timeoutMs: 20_000,
      }),
    );
    await sleep(1_500);
    await world.stack.kill(victim);
    scheduler.kill('SIGCONT');
    await Promise.all(pending);
    requests += round.length;
    await world.stack.start(victim);
    keys.push(...round);
  }
  // Retry every key (a customer would) until it answers with a job; twice, to see the same job.
  for (const k of keys) requests += await retryToOneJob(world, ledger, org, k, failures);
  return {
    scenario: 'S5 kill of a gateway / admission between claim and insert',
    faults: 'gateway kill -9, admission kill -9 (scheduler stopped)',
    requests,
    jobs: keys.length,
    pass: failures.length === 0,
    figures: `${keys.length} keys, each retried to exactly one job`,
    failures: [...new Set(failures)],
  };
}

/** Wait until the first worker logs `job started` for one of `ids` (it holds that job's lease). */
async function firstWorkerHolds(world, ids, timeoutMs) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const started = world.stack
      .logsOf('job-worker')
      .split('\n')
      .filter((line) => line.includes('"job started"'));
    const held = ids.find((id) => started.some((line) => line.includes(id)));
    if (held) return held;
    await sleep(100);
  }
  return undefined;
}

/**
 * S7: the first worker is stopped (SIGSTOP) while it holds a job whose adapter call hangs, past its
 * lease, then continued; every job is also published a second time (forced redelivery). One outcome
 * per job; the stale attempt is refused and counted (dnc_job_stale_completions_total).
 */
export async function s7RedeliveryAndStop(world, ledger, { jobs = 6, stopMs = 10_000 }) {
  const org = await scenarioOrg(world, 'Chaos S7');
  const staleOf = async () =>
    (
      await Promise.all(workers(world).map((w) => metric(world.stack, w, 'dnc_job_stale_completions_total')))
    ).reduce((a, b) => a + b, 0);
  const staleBefore = await staleOf();
  await setAdapters(world, { kind: 'hang' });
  const nc = await connect({ servers: world.servers.natsUrl });
  const js = jetstream(nc);
  const names = natsNames(world.stack.options.natsPrefix);
  const ids = [];
  let requests = 0;
  let held;
  const victim = world.stack.child('job-worker');
  try {
    for (let i = 0; i < jobs; i++) {
      const idem = randomUUID();
      const r = await api(world.publicBaseUrl, 'POST', '/v2/scrub', {
        key: org.apiKey,
        idem,
        json: { country: COUNTRY, phones: phonesOf(500).phones },
      });
      requests++;
      if (r.status !== 202) continue;
      ledger.accept(org, r.body, idem);
      ids.push(r.body.job_id);
      // The same work message again, under another message id: JetStream delivers it twice.
      await js.publish(names.jobsSubject(COUNTRY), JSON.stringify({ job_id: r.body.job_id }), {
        msgID: `${r.body.job_id}.chaos`,
      });
    }
    held = await firstWorkerHolds(world, ids, 15_000);
    victim.kill('SIGSTOP');
    await sleep(500);
    await setAdapters(world, { kind: 'pass' });
    await sleep(stopMs);
  } finally {
    victim.kill('SIGCONT');
    await setAdapters(world, { kind: 'pass' });
    await nc.close();
  }
  const active = await drainJobs(world, ledger, 90_000);
  await sleep(3_000);
  const stale = (await staleOf()) - staleBefore;
  const failures = [];
  if (!held) failures.push('the first worker never started one of the jobs (nothing to stop)');
  if (active.length) failures.push(`${active.length} jobs not terminal`);
  if (stale < 1)
    failures.push(
      'no stale attempt was refused and counted (the continued worker stayed silent: no outcome, no lease loss)',
    );
  const outcomes = ids.map((id) => ledger.jobs.get(id).status);
  for (const id of ids) {
    const r = await api(world.publicBaseUrl, 'GET', `/v2/scrub/${id}/result`, { key: org.apiKey });
    requests++;
    if (ledger.jobs.get(id).status === 'succeeded' && r.status !== 200)
      failures.push(`a succeeded job's result answered ${r.status}`);
  }
  return {
    scenario: 'S7 forced redelivery + worker stopped past its lease',
    faults: `${ids.length} duplicate deliveries, SIGSTOP ${stopMs / 1000} s`,
    requests,
    jobs: ids.length,
    pass: failures.length === 0,
    figures: `${outcomes.filter((x) => x === 'succeeded').length} succeeded, ${outcomes.filter((x) => x === 'failed').length} failed; stale attempts refused and counted: ${stale}`,
    failures,
  };
}

/**
 * A v2 key retried as a customer would (503, 409 and no answer are retried, after Retry-After) until it
 * answers with a job, twice: both answers must name the same job, which joins the ledger. Failures are
 * pushed to `failures`; returns the requests made.
 */
export async function retryToOneJob(world, ledger, org, key, failures) {
  let requests = 0;
  const ids = new Set();
  for (let attempt = 0; attempt < 2; attempt++) {
    const until = Date.now() + 40_000;
    for (;;) {
      const r = await api(world.publicBaseUrl, 'POST', '/v2/scrub', {
        key: org.apiKey,
        idem: key.idem,
        json: { country: COUNTRY, phones: key.phones },
      });
      requests++;
      if ((r.status === 202 || r.status === 200) && r.body?.job_id) {
        ids.add(r.body.job_id);
        ledger.accept(org, r.body, key.idem);
        break;
      }
      const retryable = r.status === 409 || r.status === 503 || r.status === 0;
      if (!retryable || Date.now() > until) {
        failures.push(`a retried key answered ${r.status} ${r.body?.error ?? r.error ?? ''}`);
        break;
      }
      await sleep(Math.max(500, Number(r.headers?.get('retry-after') ?? 1) * 1000));
    }
  }
  if (ids.size > 1) failures.push(`one key gave ${ids.size} jobs`);
  return requests;
}
