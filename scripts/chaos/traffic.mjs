// Mixed customer traffic over the balancer: v1 single numbers and 10k lists, v2 jobs, polls,
// results and cancels, from many organizations. Every answer is checked as it arrives (a registered
// number is never `safe`), every accepted job and every v1 charge goes into the ledger the final
// invariants are read against.
import { randomUUID } from 'node:crypto';
import { TERMINAL_JOB_STATUSES } from '@dnc/api-contract/limits';
import { api } from '../reliability/http.mjs';
import { sleep } from '../reliability/stack.mjs';
import { COUNTRY } from './world.mjs';

const TERMINAL = new Set(TERMINAL_JOB_STATUSES);
const REGISTRY_SIZE = 20_000;

/** A number every request carries (unregistered): it must be found nowhere in plaintext (issue 14). */
export const CANARIES = ['+57 300 999 0001', '3009990001', '573009990001'];

/**
 * `n` numbers with their expected class: even slots registered (prohibited), odd slots not (safe);
 * the first is the canary.
 */
export function phonesOf(n) {
  const phones = [CANARIES[0]];
  let prohibited = 0;
  for (let i = 1; i < n; i++) {
    const slot = Math.floor(Math.random() * REGISTRY_SIZE * 2);
    if (slot % 2 === 0) prohibited++;
    phones.push(
      `+57 300 ${String(slot)
        .padStart(7, '0')
        .replace(/^(\d{3})/, '$1 ')}`,
    );
  }
  return { phones, prohibited };
}

/** What every scenario adds to, and the final invariants are read against. */
export class Ledger {
  jobs = new Map();
  v1 = new Map();
  /** Charges the suite cannot see (answers never read, S17): at most this much more per organization. */
  loose = new Map();
  /**
   * v1 requests whose client got no 200 (a 5xx, no answer). Each may have been completed all the same
   * (Complete committed, the answer lost): after the scenarios each is retried with its key, as a
   * client would, and counts once — a replay proves the first was completed (and charged), otherwise
   * the retry itself is the charge (issue 14: one charge per completed logical request).
   */
  unanswered = [];
  /**
   * v2 submissions whose client got no 202 (a 5xx, no answer, or anything after the transport's
   * retry): the job may be stored all the same (SubmitJob's outcome unknown to the gateway), run and be
   * charged. After the scenarios each is retried with its key, as a client would: the job it answers
   * joins the ledger and the drain (spec: the same key gives the same job).
   */
  unansweredJobs = [];
  wrong = [];
  /**
   * Every v1 request of the traffic by organization, as the client saw it, so a quota discrepancy can
   * be traced to requests and to their claims and usage records: `{ idem, n, kind, status, replayed,
   * retried (the transport's one retry on a reused socket), charged, how }`. No phone numbers.
   */
  requests = new Map();
  charge(orgId, n) {
    this.v1.set(orgId, (this.v1.get(orgId) ?? 0) + n);
  }
  /** Note one v1 answer (`how`: 'traffic' or 'retry'); `charged` when it went into `v1`. */
  note(orgId, entry) {
    if (!this.requests.has(orgId)) this.requests.set(orgId, []);
    this.requests.get(orgId).push({ ...entry, at: Date.now() });
  }
  accept(org, body, key) {
    if (!this.jobs.has(body.job_id))
      this.jobs.set(body.job_id, { org, count: body.submitted_count, key, status: body.status });
  }
  /** Check a v1 or v2 result against what the numbers are. */
  verify(result, prohibited, where) {
    const s = result?.summary;
    if (!s || s.prohibited_numbers !== prohibited)
      this.wrong.push(`${where}: ${s?.prohibited_numbers} prohibited, expected ${prohibited}`);
  }
}

/** A request without an answer, described: the error, when, on which socket, after which retry. */
function lostOf(res) {
  return {
    error: res.error ?? 'unknown',
    code: res.code,
    phase: res.phase,
    reused: res.reused,
    afterMs: res.afterMs ?? Math.round(res.ms ?? 0),
    retried: res.retried,
  };
}

/** One line for a list of lost requests: each distinct failure once, with its count. */
export function describeLost(lost) {
  const seen = new Map();
  for (const l of lost) {
    const socket = l.reused ? 'reused socket' : 'new socket';
    const when =
      l.phase === 'response' ? 'while reading the answer' : l.phase === 'script' ? '' : 'before any answer';
    const first = l.retried
      ? `; the first attempt: ${l.retried.error}${l.retried.code ? ` (${l.retried.code})` : ''} after ${l.retried.afterMs} ms`
      : '';
    const text = `${l.kind}: ${l.error}${l.code ? ` (${l.code})` : ''}${when ? ` ${when}` : ''}, ${socket}${first}`;
    const s = seen.get(text) ?? { n: 0, after: [] };
    s.n++;
    s.after.push(l.afterMs);
    seen.set(text, s);
  }
  return [...seen]
    .map(([text, s]) => `${s.n} x ${text}, after ${s.after.slice(0, 5).join('/')} ms`)
    .join('; ');
}

/** Per-kind figures of a stretch of traffic. */
export class Tally {
  kinds = new Map();
  fivexx = [];
  noAnswer = 0;
  /** What each request without an answer met (no phone numbers, no keys). */
  lost = [];
  /** Requests answered only by the transport's retry (the first attempt failed on a reused socket). */
  retried = 0;
  requests = 0;
  /**
   * Latencies count only for requests started at or after `from` and answered by `to` (ms since the
   * epoch); every request counts for the rest (answers, 5xx, requests). S1 measures between its
   * memory probes: a probe forces a full collection in every process at once (probe.mjs), a stall of
   * the whole stack that is the harness's, and the first seconds are the stack's warm-up.
   */
  window = { from: 0, to: Number.POSITIVE_INFINITY };
  /** [started at, ms, kind, status] of every request when set to an array (CHAOS_TIMELINE, S1). */
  timeline = undefined;
  add(kind, res) {
    this.requests++;
    let k = this.kinds.get(kind);
    if (!k) {
      k = { ms: [], n: 0, statuses: new Map() };
      this.kinds.set(kind, k);
    }
    k.n++;
    const end = Date.now();
    if (end - res.ms >= this.window.from && end <= this.window.to) k.ms.push(res.ms);
    this.timeline?.push([end - res.ms, Math.round(res.ms), kind, res.status]);
    k.statuses.set(res.status, (k.statuses.get(res.status) ?? 0) + 1);
    if (res.retried) this.retried++;
    if (res.status === 0) {
      this.noAnswer++;
      this.lost.push({ at: Date.now(), kind, ...lostOf(res) });
    }
    if (res.status >= 500)
      this.fivexx.push({
        at: Date.now(),
        kind,
        status: res.status,
        code: res.body?.error,
        retryAfter: res.headers?.get('retry-after') ?? undefined,
      });
  }
  /** `N requests got no answer: <what each met>` (empty when every request was answered). */
  noAnswerLine(prefix = '') {
    if (!this.noAnswer) return [];
    return [`${prefix}${this.noAnswer} requests got no answer: ${describeLost(this.lost)}`];
  }
  p(kind, q) {
    const ms = [...(this.kinds.get(kind)?.ms ?? [])].sort((a, b) => a - b);
    return ms.length ? ms[Math.min(ms.length - 1, Math.floor(ms.length * q))] : Number.NaN;
  }
  count(kind) {
    return this.kinds.get(kind)?.n ?? 0;
  }
}

const MIX = [
  ['v1 small', 60],
  ['v1 10k', 1],
  ['v2 job', 8],
  ['poll', 22],
  ['result', 5],
  ['cancel', 4],
];

function pick() {
  let r = Math.random() * MIX.reduce((s, [, w]) => s + w, 0);
  for (const [kind, w] of MIX) {
    r -= w;
    if (r < 0) return kind;
  }
  return MIX[0][0];
}

/** One customer action; returns its kind and response. */
async function act(world, ledger, tally, kind, org) {
  const base = world.publicBaseUrl;
  const key = org.apiKey;
  const mine = [...ledger.jobs].filter(([, j]) => j.org === org);
  const someJob = mine.length ? mine[Math.floor(Math.random() * mine.length)] : undefined;
  if ((kind === 'poll' || kind === 'result' || kind === 'cancel') && !someJob) kind = 'v1 small';
  if (kind === 'v1 small' || kind === 'v1 10k') {
    const { phones, prohibited } = phonesOf(kind === 'v1 small' ? 1 + Math.floor(Math.random() * 3) : 10_000);
    const idem = randomUUID();
    const res = await api(base, 'POST', '/v1/scrub', { key, idem, json: { country: COUNTRY, phones } });
    tally.add(kind, res);
    const replayed = res.status === 200 && res.headers.get('idempotency-replayed') === 'true';
    // The key is new: an answer that replays it can only replay an earlier transmission of this same
    // request (the transport's retry after its first attempt failed on a reused socket, which the
    // server may have received and completed). One logical request, one charge, replayed or not.
    // Any other answer to such a retry (409: that first transmission still in progress) says nothing
    // of the request's outcome: it is retried at the end like a 5xx and counted once there.
    if (res.status === 200) {
      ledger.verify(res.body, prohibited, kind);
      ledger.charge(org.orgId, phones.length);
    } else if (res.status >= 500 || res.status === 0 || res.retried) {
      ledger.unanswered.push({ org, idem, phones, prohibited, kind });
    }
    ledger.note(org.orgId, {
      idem,
      n: phones.length,
      kind,
      status: res.status,
      error: res.status === 0 ? res.error : res.body?.error,
      replayed,
      retried: Boolean(res.retried),
      first: res.retried ? `${res.retried.error} after ${res.retried.afterMs} ms` : undefined,
      charged: res.status === 200,
      how: 'traffic',
    });
    return;
  }
  if (kind === 'v2 job') {
    const { phones } = phonesOf(200 + Math.floor(Math.random() * 1800));
    const idem = randomUUID();
    const res = await api(base, 'POST', '/v2/scrub', { key, idem, json: { country: COUNTRY, phones } });
    tally.add(kind, res);
    if (res.status === 202 || (res.status === 200 && res.body?.job_id)) ledger.accept(org, res.body, idem);
    else if (res.status >= 500 || res.status === 0 || res.retried)
      ledger.unansweredJobs.push({ org, idem, phones });
    return;
  }
  const [jobId, job] = someJob;
  if (kind === 'poll') {
    const res = await api(base, 'GET', `/v2/scrub/${jobId}`, { key });
    tally.add(kind, res);
    if (res.status === 200) job.status = res.body.status;
  } else if (kind === 'result') {
    tally.add(kind, await api(base, 'GET', `/v2/scrub/${jobId}/result`, { key }));
  } else {
    tally.add(kind, await api(base, 'POST', `/v2/scrub/${jobId}/cancel`, { key }));
  }
}

/** One action of a random organization and kind; the script's own failure is named as such. */
async function actOnce(world, ledger, tally, orgs, kinds) {
  const org = orgs[Math.floor(Math.random() * orgs.length)];
  const kind = kinds ? kinds[Math.floor(Math.random() * kinds.length)] : pick();
  try {
    await act(world, ledger, tally, kind, org);
  } catch (error) {
    tally.add(kind, {
      status: 0,
      ms: 0,
      error: `the script threw: ${error?.message ?? error}`,
      phase: 'script',
    });
  }
}

/**
 * Traffic from `orgs` until `stop()`. A closed loop by default: `concurrency` customers at once, each
 * waiting for its answer, then `pace` ms, then acting again. With `rate` (actions a second) an open
 * loop instead: actions arrive at that mean rate (Poisson arrivals) whether or not earlier ones were
 * answered, at most `maxInFlight` at once. An arrival that finds `maxInFlight` actions open is not sent
 * and counted in `tally.notSent` (the offered load was not held); `tally.lateMs` is how far the
 * latest action left after its scheduled time (the generator's own lag).
 */
export function startTraffic(
  world,
  ledger,
  { orgs = world.orgs, concurrency = 8, pace = 20, kinds, rate, maxInFlight = 256 } = {},
) {
  const tally = new Tally();
  let running = true;
  if (rate)
    return openLoop(world, ledger, tally, {
      orgs,
      kinds,
      rate,
      maxInFlight,
      running: () => running,
      stop: () => {
        running = false;
      },
    });
  const lanes = Array.from({ length: concurrency }, async () => {
    while (running) {
      await actOnce(world, ledger, tally, orgs, kinds);
      await sleep(pace);
    }
  });
  return {
    tally,
    async stop() {
      running = false;
      await Promise.all(lanes);
      return tally;
    },
  };
}

function openLoop(world, ledger, tally, { orgs, kinds, rate, maxInFlight, running, stop }) {
  const open = new Set();
  tally.notSent = 0;
  tally.lateMs = 0;
  const arrivals = (async () => {
    let next = performance.now();
    while (running()) {
      next += (-Math.log(1 - Math.random()) * 1000) / rate;
      const wait = next - performance.now();
      if (wait > 0) await sleep(wait);
      if (!running()) break;
      tally.lateMs = Math.max(tally.lateMs, performance.now() - next);
      if (open.size >= maxInFlight) {
        tally.notSent++;
        continue;
      }
      const action = actOnce(world, ledger, tally, orgs, kinds).finally(() => open.delete(action));
      open.add(action);
    }
  })();
  return {
    tally,
    async stop() {
      stop();
      await arrivals;
      await Promise.all([...open]);
      return tally;
    },
  };
}

/** Poll every accepted job until terminal (or `timeoutMs`); returns the ones still active. */
export async function drainJobs(world, ledger, timeoutMs = 120_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const active = [...ledger.jobs].filter(([, j]) => !TERMINAL.has(j.status));
    if (active.length === 0 || Date.now() > until) return active;
    for (const [jobId, job] of active) {
      const res = await api(world.publicBaseUrl, 'GET', `/v2/scrub/${jobId}`, { key: job.org.apiKey });
      if (res.status === 200) job.status = res.body.status;
    }
    await sleep(500);
  }
}

export { TERMINAL };
