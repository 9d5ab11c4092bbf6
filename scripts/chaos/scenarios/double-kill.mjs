// S18: an admission process and the job scheduler both killed with v2 submissions inside them.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { api } from '../../reliability/http.mjs';
import { sleep } from '../../reliability/stack.mjs';
import { phonesOf } from '../traffic.mjs';
import { COUNTRY, keyMacOf, scenarioOrg } from '../world.mjs';
import { retryToOneJob } from './processes.mjs';

/**
 * Where the submissions of `keys` stand in the stores (by their Idempotency-Key's MAC): claims in progress, of which with
 * their job stored, and claims accepted (their job stored and confirmed). A key with no claim has none.
 */
async function claimStates(world, db, keys) {
  const hashes = keys.map((k) => keyMacOf(world, k.idem));
  const r = await db.query(
    `SELECT r.state, j.id IS NOT NULL AS stored, count(*)::int AS n
       FROM admission.idempotency_records r LEFT JOIN jobs.jobs j ON j.id = r.job_id
      WHERE r.key_mac = ANY($1) GROUP BY 1, 2`,
    [hashes],
  );
  const n = (state, stored) =>
    r.rows
      .filter((row) => row.state === state && (stored === undefined || row.stored === stored))
      .reduce((a, row) => a + row.n, 0);
  return {
    inProgress: n('in_progress'),
    inProgressStored: n('in_progress', true),
    accepted: n('accepted'),
  };
}

/** `keys`' claims once none is in progress any more (or after 90 s: what is left is a failure). */
async function resolved(world, db, keys) {
  const until = Date.now() + 90_000;
  let states = await claimStates(world, db, keys);
  while (states.inProgress > 0 && Date.now() < until) {
    await sleep(1_000);
    states = await claimStates(world, db, keys);
  }
  return states;
}

/**
 * The scheduler is stopped and `keys` go at once: each takes its claim and its JOB reservation and
 * waits on SubmitJob. The admission process dies (kill -9). Then the scheduler dies too: still stopped
 * (`storeFirst` false: no job stored, every claim without one), or continued first for `stopMs` (it
 * stores the jobs it was sent and answers; the gateway's ConfirmJob finds that admission gone, or
 * reaches the other replica), before or after its work messages went out. Both are started again.
 * Returns every submission's answer and where the claims stood with both dead.
 */
async function submitIntoBoth(world, db, submit, keys, { storeFirst, stopMs }) {
  const scheduler = world.stack.child('job-scheduler');
  scheduler.kill('SIGSTOP');
  const answers = keys.map(submit);
  const claimEnd = Date.now() + 10_000;
  let claimed = await claimStates(world, db, keys);
  while (claimed.inProgress < keys.length && Date.now() < claimEnd) {
    await sleep(50);
    claimed = await claimStates(world, db, keys);
  }
  await world.stack.kill('admission');
  if (storeFirst) {
    scheduler.kill('SIGCONT');
    await sleep(stopMs);
  }
  await world.stack.kill('job-scheduler');
  // With both dead nothing can move these claims until they are back.
  const bothDead = await claimStates(world, db, keys);
  const results = await Promise.all(answers);
  await Promise.all([world.stack.start('admission'), world.stack.start('job-scheduler')]);
  return { results, claimed: claimed.inProgress, bothDead };
}

/**
 * S18: an admission process and the job scheduler both killed (kill -9) with v2 submissions inside
 * them, twice: claims in progress, their JOB reservations held (which only admission's claim reconciler
 * releases, or their job settles), with no job stored (the scheduler killed while stopped) or with
 * their jobs stored and the claims not accepted (killed after it ran); both started again at once.
 * Half of the keys left without an answer are retried at once, as a client would, each to exactly one
 * job; the other half only once the claim reconciler has resolved every one of their claims (FenceJob
 * against the restarted scheduler: the job kept and the claim accepted, or its id fenced, the
 * reservation released and the claim dropped), then retried by the final step. Every answered job's
 * claim must end accepted (a 202 its key replays), and the final invariants hold the money to it:
 * nothing left reserved, every job charged once, one job per key.
 */
export async function s18KillAdmissionAndScheduler(world, ledger, options) {
  // One connection to the stores for the scenario's reads (PostgreSQL is not among the processes killed).
  const db = new pg.Client({ connectionString: world.stack.options.databaseUrl });
  await db.connect();
  try {
    return await killBoth(world, ledger, db, options);
  } finally {
    await db.end();
  }
}

async function killBoth(world, ledger, db, { submissions = 24, paceMs = 60, stopMs = 500 }) {
  const org = await scenarioOrg(world, 'Chaos S18');
  const keys = Array.from({ length: submissions }, () => ({
    idem: randomUUID(),
    phones: phonesOf(50).phones,
  }));
  const gateway = world.stack.addresses.gateways[0];
  const submit = (k) =>
    api(gateway, 'POST', '/v2/scrub', {
      key: org.apiKey,
      idem: k.idem,
      json: { country: COUNTRY, phones: k.phones },
      timeoutMs: 20_000,
    });
  // A third answered first, one after another; then two bursts into the services killed under them.
  const paced = keys.slice(0, Math.floor(keys.length / 3));
  const pacedResults = [];
  for (const k of paced) {
    pacedResults.push(await submit(k));
    await sleep(paceMs);
  }
  const half = paced.length + Math.floor((keys.length - paced.length) / 2);
  const rounds = [
    await submitIntoBoth(world, db, submit, keys.slice(paced.length, half), { storeFirst: false, stopMs }),
    await submitIntoBoth(world, db, submit, keys.slice(half), { storeFirst: true, stopMs }),
  ];
  const results = [...pacedResults, ...rounds.flatMap((r) => r.results)];
  const failures = [];
  let requests = results.length;
  const answered = [];
  const unanswered = [];
  results.forEach((r, i) => {
    if (r.status === 202 || (r.status === 200 && r.body?.job_id)) {
      ledger.accept(org, r.body, keys[i].idem);
      answered.push(keys[i]);
    } else if (r.status >= 500 || r.status === 0) unanswered.push(keys[i]);
    else failures.push(`a submission answered ${r.status} ${r.body?.error ?? ''}`);
  });
  const now = unanswered.filter((_, i) => i % 2 === 0);
  const later = unanswered.filter((_, i) => i % 2 === 1);
  for (const k of now) requests += await retryToOneJob(world, ledger, org, k, failures);
  // The rest are not retried until the claim reconciler resolved them (DNC_JOB_CLAIM_TIMEOUT_SECONDS).
  const [ofAnswered, ofLater] = await Promise.all([
    resolved(world, db, answered),
    resolved(world, db, later),
  ]);
  const stuck = ofAnswered.inProgress + ofLater.inProgress;
  if (stuck > 0) failures.push(`${stuck} claims still in progress 90 s after the kills (not reconciled)`);
  const dropped = answered.length - ofAnswered.accepted - ofAnswered.inProgress;
  if (dropped > 0)
    failures.push(`${dropped} answered jobs lost their claim (a 202 the key no longer replays)`);
  // The final step retries them as a client would: the job the claim kept, or a fresh admission.
  for (const k of later) ledger.unansweredJobs.push({ org, idem: k.idem, phones: k.phones });

  const stood = (r) =>
    `${r.claimed} claims held when admission died; with both dead ${r.bothDead.inProgressStored} of them with their job stored, ${r.bothDead.inProgress - r.bothDead.inProgressStored} without, ${r.bothDead.accepted} accepted`;
  return {
    scenario: 'S18 kill -9 of admission and the job scheduler together',
    faults: 'admission kill -9 with submissions inside, then job-scheduler kill -9 (twice)',
    requests,
    jobs: keys.length,
    pass: failures.length === 0,
    figures: `${keys.length} submissions; killed with the scheduler stopped: ${stood(rounds[0])}; killed after it ran ${stopMs} ms: ${stood(rounds[1])}; ${answered.length} answered 202, every one's claim accepted in the end; of ${unanswered.length} unanswered, ${now.length} retried at once to one job each, ${later.length} left to the reconciler (${ofLater.accepted} kept a job) and retried last`,
    failures: [...new Set(failures)],
  };
}
