// S19: kill -9 of the quota service, then of each registry adapter, under mixed traffic.
import { sleep } from '../../reliability/stack.mjs';
import { retryUnanswered, retryUnansweredJobs } from '../retries.mjs';
import { drainJobs, startTraffic } from '../traffic.mjs';
import { COUNTRY_ERRORS, setAdapters } from './adapter.mjs';

const KINDS = ['v1 small', 'v1 small', 'v2 job', 'poll'];
const between = (a, b) => a + Math.random() * (b - a);
/** The 503 codes the spec documents for a platform (quota) or a country (adapter) failure. */
const OUTAGE = new Set(['platform_failure', ...COUNTRY_ERRORS]);
/**
 * What else each kind may answer under these faults (5xx and no answer are judged apart): 409
 * `idempotency_request_in_progress` only after the transport's retry (every key is new), 429 as
 * documented.
 */
const ALLOWED = {
  'v1 small': new Set([200, 409, 429]),
  'v2 job': new Set([200, 202, 409, 429]),
  poll: new Set([200, 429]),
};

/**
 * Lines logged between `since` and `until` (ms) by the processes whose name starts with `prefix`,
 * with message `msg` and, when given, `method` (counted only: a log line is never printed).
 */
function logged(world, prefix, msg, { since, until }, method) {
  let n = 0;
  for (const name of [...world.stack.processes.keys()].filter((p) => p.startsWith(prefix)))
    for (const line of world.stack.logsOf(name).split('\n')) {
      if (!line.includes(`"msg":"${msg}"`) || (method && !line.includes(`"method":"${method}"`))) continue;
      const at = Date.parse(/"time":"([^"]+)"/.exec(line)?.[1] ?? '');
      if (at >= since && at <= until) n++;
    }
  return n;
}

/**
 * Mixed traffic while each of `names` in turn is killed (kill -9) `kills` times in all, every
 * `minGapS`-`maxGapS` s, left down `downMs`, then started again (until it serves); 2 s of traffic after
 * the last restart. Returns the traffic's tally and the kills made.
 */
async function killUnderTraffic(world, ledger, names, { kills, minGapS, maxGapS, downMs }) {
  const since = Date.now();
  const traffic = startTraffic(world, ledger, { concurrency: 6, pace: 20, kinds: KINDS });
  let made = 0;
  try {
    for (let i = 0; i < kills; i++) {
      await sleep(between(minGapS, maxGapS) * 1000);
      const victim = names[i % names.length];
      await world.stack.kill(victim);
      made++;
      await sleep(downMs);
      await world.stack.start(victim);
    }
    await sleep(2_000);
  } finally {
    await traffic.stop();
  }
  return { t: traffic.tally, kills: made, since, until: Date.now() };
}

/**
 * What a phase's answers broke: a 5xx other than a documented 503 (and a v1 country 503 without
 * Retry-After, as S4 and S10 take it), a status its kind never answers, a request without an answer
 * (no gateway is killed).
 */
function judge(phase, t) {
  const failures = [];
  const documented = (f) =>
    f.status === 503 &&
    OUTAGE.has(f.code) &&
    !(f.kind.startsWith('v1') && COUNTRY_ERRORS.has(f.code) && f.retryAfter == null);
  for (const f of t.fivexx.filter((x) => !documented(x)))
    failures.push(
      `${phase}: ${f.kind} answered ${f.status} ${f.code ?? ''}${f.retryAfter == null ? ' (no Retry-After)' : ''}`,
    );
  for (const [kind, k] of t.kinds)
    for (const [status, n] of k.statuses)
      if (status > 0 && status < 500 && !ALLOWED[kind]?.has(status))
        failures.push(`${phase}: ${n} x ${kind} answered ${status}`);
  failures.push(...t.noAnswerLine(`${phase}: `));
  const codes = new Map();
  for (const f of t.fivexx.filter(documented)) codes.set(f.code, (codes.get(f.code) ?? 0) + 1);
  const of = (kind, status) => t.kinds.get(kind)?.statuses.get(status) ?? 0;
  const errors = [...codes].map(([c, n]) => `${n} 503 ${c}`).join(', ') || 'no 503';
  const figures = `${t.requests} requests (v1 ${of('v1 small', 200)}/${t.count('v1 small')} 200, v2 ${of('v2 job', 202)}/${t.count('v2 job')} 202), ${errors}, ${of('v1 small', 409) + of('v2 job', 409)} 409, ${of('v1 small', 429) + of('v2 job', 429)} 429`;
  return { failures, figures };
}

/**
 * S19: the quota service killed (kill -9) `kills` times under mixed traffic (v1 requests and v2
 * admissions in flight), then the `co` adapters in turn the same, their Checks slowed (300 ms a chunk)
 * so a kill lands mid-Check. Every answer is a complete result, a job or a documented error; the
 * requests left without a 200/202 are retried with their keys as a client would (a completed v1 one
 * replays, a stored job is found); every job accepted terminal; the final invariants hold the quota to
 * the answers (nothing reserved, no charge without a 200 or a succeeded job).
 */
export async function s19KillQuotaAndAdapter(world, ledger, options) {
  // Only this scenario's in-doubt requests are retried here; earlier ones are put back for the end.
  const earlier = { v1: ledger.unanswered.splice(0), v2: ledger.unansweredJobs.splice(0) };
  const jobsBefore = new Set(ledger.jobs.keys());
  const wrongBefore = ledger.wrong.length;
  const adapters = [...world.stack.processes.keys()].filter((n) => n.startsWith('adapter-'));
  let quota;
  let adapter;
  let retried;
  try {
    // Checks slowed for both phases: a quota kill finds v1 requests reserved and waiting on their
    // Check (their Complete or Abort meets the dead quota), an adapter kill lands mid-Check.
    await setAdapters(world, { kind: 'slow', delayMs: 300 });
    try {
      quota = await killUnderTraffic(world, ledger, ['quota'], options);
      adapter = await killUnderTraffic(world, ledger, adapters, options);
    } finally {
      await setAdapters(world, { kind: 'pass' });
    }
    retried = {
      unanswered: ledger.unanswered.length,
      unansweredJobs: ledger.unansweredJobs.length,
      v2: await retryUnansweredJobs(world, ledger),
      v1: await retryUnanswered(world, ledger),
    };
  } finally {
    ledger.unanswered.push(...earlier.v1);
    ledger.unansweredJobs.push(...earlier.v2);
  }
  return report(world, ledger, { quota, adapter, retried, adapters, jobsBefore, wrongBefore });
}

async function report(world, ledger, { quota, adapter, retried, adapters, jobsBefore, wrongBefore }) {
  const active = await drainJobs(world, ledger, 90_000);
  const q = judge('quota', quota.t);
  const a = judge('adapter', adapter.t);
  const failures = [
    ...q.failures,
    ...a.failures,
    ...retried.v2.failures,
    ...retried.v1.failures,
    ...ledger.wrong.slice(wrongBefore),
    ...(active.length ? [`${active.length} jobs not terminal 90 s after the last kill`] : []),
  ];
  const cut = logged(world, 'admission', 'admission dependency failed', quota, 'complete');
  const settlements = logged(world, 'job-', 'quota settlement failed; will retry', quota);
  const calls = logged(world, 'job-worker', 'adapter call failed', adapter);
  const mine = [...ledger.jobs].filter(([id]) => !jobsBefore.has(id)).map(([, j]) => j.status);
  const ended = (s) => mine.filter((x) => x === s).length;
  return {
    scenario: 'S19 kill -9 of quota, then of the co adapters',
    faults: `quota kill -9 x ${quota.kills}, ${adapters.join('/')} kill -9 x ${adapter.kills} (slowed)`,
    requests: quota.t.requests + adapter.t.requests,
    jobs: mine.length,
    pass: failures.length === 0,
    figures: `quota: ${q.figures}, ${cut} v1 Completes and ${settlements} job settlements cut by a kill; adapters: ${a.figures}, ${calls} worker Checks failed; ${retried.unanswered} unanswered v1 retried (${retried.v1.replayed} replayed), ${retried.unansweredJobs} unanswered v2 retried (${retried.v2.jobs} to a job); jobs ${ended('succeeded')} succeeded, ${ended('failed')} failed, ${ended('cancelled')} cancelled, ${active.length} not terminal`,
    failures: [...new Set(failures)],
  };
}
