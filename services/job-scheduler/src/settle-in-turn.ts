import type { SettleOutcome } from './settlement.js';
import type { JobRow } from './store/jobs.js';

/** Settlements quota may leave unanswered in one sweep before the sweep's others wait for the next. */
export const UNANSWERED_PER_TICK = 3;

/** What `settleInTurn` does with a job, and the waits it sets (the sweeper's store). */
export interface SettleTurnPort {
  /** Before each settlement: false once this replica no longer holds the sweeps' turn (the rest wait). */
  keepTurn(): Promise<boolean>;
  settle(job: JobRow): Promise<SettleOutcome>;
  /** This job alone waits (doubling per failure, at most a minute). */
  waitJob(job: JobRow): Promise<void>;
  /** The job's account (organization and country) waits (doubling per failure, at most a minute). */
  waitAccount(job: JobRow): Promise<void>;
  /**
   * The job's account waits a short while (quota may be down for every account), its count unchanged:
   * `spentMs`, what the unanswered calls of this verdict took, added to it, so that accounts whose calls hang
   * are not tried again before the sweeps they stalled have passed.
   */
  hold(job: JobRow, spentMs: number): Promise<void>;
  /** A job of the account settled: a wait it had is over. */
  answeredAccount(job: JobRow): Promise<void>;
}

const accountOf = (job: JobRow) => `${job.orgId}/${job.country}`;

/**
 * Settle `jobs` (oldest first) in turn, passing over the accounts whose wait lasts (`waits`, by `org/country`:
 * those with a wait, over or not); answers the unanswered settlements still allowed in this sweep
 * (`unansweredLeft` less those spent; 0 when the sweep's settlements must stop).
 *
 * A job quota refused (judged its request wrong) waits alone. A settlement left unanswered (quota down,
 * hung, overloaded, waiting on a lock, failing) is explained by the next tries before anything waits:
 * - another job of its account settles: that job alone waits;
 * - its account's next job is left unanswered too and another account's settles: both jobs wait, and the
 *   account as well;
 * - the next account's is left unanswered too, or the sweep's budget of unanswered calls is spent: quota
 *   itself may be down, so the accounts that failed are held a short while (plus what their calls took),
 *   their count of failures unchanged, and the sweep's settlements stop. A quota that hangs instead of
 *   refusing holds each call for its whole deadline (5 s), and every step behind it would wait for them;
 * - nothing else was tried and quota answered nothing in this call: the account is held likewise, and the
 *   sweep's settlements go on (the next call's jobs may be other accounts').
 * The sweeps' turn is kept (renewed) before each call: a step of many slow calls would outlast it.
 *
 * Found by reviews (2026-12-04): the oldest unsettled job came first on every sweep and a sweep stopped at the
 * first failure, so one account held locked stopped every organization's settlements; then the wait was the
 * account's whatever failed, so while quota was down the accounts tried first were left waiting up to a
 * minute after it came back, and one job refused every time held its account's others for good.
 */
export async function settleInTurn(
  jobs: readonly JobRow[],
  waits: ReadonlyMap<string, { waiting: boolean }>,
  unansweredLeft: number,
  port: SettleTurnPort,
): Promise<number> {
  const left = [...jobs];
  const skipped = new Set([...waits].filter(([, w]) => w.waiting).map(([account]) => account));
  const withWait = new Set(waits.keys());
  let budget = unansweredLeft;
  /** Unanswered settlements not explained yet: one job, or two of one account. */
  let failed: JobRow[] = [];
  let answered = false;
  const next = (): JobRow | undefined => {
    let i = -1;
    if (failed.length === 1) i = left.findIndex((j) => accountOf(j) === accountOf(failed[0]!));
    if (i < 0) i = left.findIndex((j) => !skipped.has(accountOf(j)));
    return i < 0 ? undefined : left.splice(i, 1)[0];
  };
  /** Quota answered another job: the failed ones wait on their own, and their account if two of it failed. */
  const explained = async () => {
    for (const job of failed) await port.waitJob(job);
    if (failed.length > 1) await port.waitAccount(failed[0]!);
    failed = [];
  };
  /** What the unanswered calls not explained yet took. */
  let spentMs = 0;
  const hold = async (jobs: JobRow[]) => {
    for (const job of jobs) await port.hold(job, spentMs);
  };
  for (let job = next(); job; job = next()) {
    if (!(await port.keepTurn())) return 0;
    const account = accountOf(job);
    const started = performance.now();
    const outcome = await port.settle(job);
    if (outcome === 'refused') {
      answered = true;
      await port.waitJob(job);
    } else if (outcome === 'settled') {
      answered = true;
      if (failed.length > 0 && accountOf(failed[0]!) === account) skipped.delete(account);
      await explained();
      spentMs = 0;
      if (withWait.delete(account)) await port.answeredAccount(job);
    } else {
      spentMs += performance.now() - started;
      if (--budget <= 0 || (failed.length > 0 && accountOf(failed[0]!) !== account)) {
        // The budget spent, or a second account unanswered in a row: quota may be down for every account.
        await hold([...failed, job]);
        return 0;
      }
      failed.push(job);
      skipped.add(account);
    }
  }
  if (failed.length === 0) return budget;
  if (answered) await explained();
  else await hold(failed);
  return budget;
}
