import { isTerminalJobStatus, type JobStatus, type TerminalJobStatus } from '@dnc/api-contract/limits';

// The spec's job statuses (queued and running active, the rest terminal and final) and the closed
// vocabulary of JobError are the contract's (@dnc/api-contract/limits: JOB_STATUSES, JOB_ERROR_CODES);
// their form on the wire is kit's protoJobStatus / jobStatusOf. This module holds the rules.

/*
 * The transitions of the States table are enforced where they happen, by the store under the job's
 * row lock (store/jobs.ts), not by a mirror here: queued -> running in `claim` (a running job whose
 * lease expired is claimed again), running -> succeeded | failed only with the lease token
 * (`WHERE ... lease_token = $2 AND status = 'running'`), and every terminalization in
 * `terminalizeLocked` (`WHERE id = $1 AND status IN ('queued', 'running')`), so a terminal state never
 * changes. The job tests provoke each (test/jobs.int.test.ts, test/e2e/jobs*.e2e.test.ts).
 */

/** What a cancel request does, by the States table. */
export type CancelDecision =
  | { kind: 'cancel_now' }
  | { kind: 'cancel_after_call' }
  | { kind: 'keep_terminal'; state: TerminalJobStatus };

export function decideCancel(state: JobStatus, externalCallsInFlight: number): CancelDecision {
  if (isTerminalJobStatus(state)) return { kind: 'keep_terminal', state };
  if (state === 'running' && externalCallsInFlight > 0) return { kind: 'cancel_after_call' };
  return { kind: 'cancel_now' };
}

/** What happens to the customer's reservation when a job reaches a terminal state. */
export function quotaSettlementFor(state: TerminalJobStatus): 'commit' | 'release' {
  return state === 'succeeded' ? 'commit' : 'release';
}

/** Whether a terminal state carries a JobError: only `failed` and `expired` do, `cancelled` never. */
export function carriesError(state: JobStatus): boolean {
  return state === 'failed' || state === 'expired';
}

export interface RetentionPolicy {
  hardCapSeconds: number;
  resultTtlSeconds: number;
  metadataTtlSeconds: number;
  /** The longest a result download streams: the scheduler ends it then, whatever its caller's deadline. */
  resultStreamMaxMs: number;
}

/**
 * How long past its retention a result is purged: twice the longest download, so a download that began
 * the moment before the retention ended, and the segment reads it started before its end (each waits
 * for a pooled connection first), are over when the segments go. A download cut in the middle by the
 * purge would have been a truncated result (spec: "A result is always complete"). The result is
 * answered `job_result_expired` from the end of its retention as before: only its deletion waits.
 */
export function resultPurgeDelaySeconds(policy: Pick<RetentionPolicy, 'resultStreamMaxMs'>): number {
  return Math.ceil((2 * policy.resultStreamMaxMs) / 1000);
}

/**
 * `expires_at` by state (spec "States"): active jobs expire at admission plus the hard cap, the one stored
 * with the job at admission (`hard_cap_at`, what the sweeper expires it on: a hard cap configured later,
 * longer, does not move it; a shorter one is written into the row); a succeeded job's result at
 * terminalization plus the result TTL; other terminal jobs' metadata at terminalization plus the metadata
 * TTL.
 */
export function expiresAt(
  job: { status: JobStatus; createdAt: Date; terminalAt: Date | null; hardCapAt: Date },
  policy: RetentionPolicy,
): Date {
  if (!isTerminalJobStatus(job.status)) return job.hardCapAt;
  const terminal = job.terminalAt ?? job.createdAt;
  const ttl = job.status === 'succeeded' ? policy.resultTtlSeconds : policy.metadataTtlSeconds;
  return new Date(terminal.getTime() + ttl * 1000);
}

/**
 * What is left of a failed job's retry hint (JobError `retry_after_seconds`, "same meaning as Retry-After"):
 * the seconds from the failure until the country expected to serve again, counted from now, so a status read
 * later never repeats a wait that has passed; 0 (no hint) once it has.
 */
export function retryHintLeft(
  job: { errorRetryAfter: number | null; terminalAt: Date | null },
  now: Date,
): number {
  if (!job.errorRetryAfter || !job.terminalAt) return 0;
  const until = job.terminalAt.getTime() + job.errorRetryAfter * 1000;
  // `terminal_at` is the database's clock, `now` this process's: a clock behind never lengthens the wait.
  return Math.min(job.errorRetryAfter, Math.max(0, Math.ceil((until - now.getTime()) / 1000)));
}

/** Which answer the result endpoint gives for a job, by the spec's result statuses. */
export type ResultAvailability =
  | { kind: 'ready' }
  | { kind: 'not_ready'; retryAfterSeconds?: number }
  | { kind: 'job_expired' }
  | { kind: 'result_expired' };

export function resultAvailability(
  job: { status: JobStatus; terminalAt: Date | null; resultPurged: boolean },
  policy: RetentionPolicy,
  now: Date,
): ResultAvailability {
  switch (job.status) {
    case 'queued':
    case 'running':
      return { kind: 'not_ready', retryAfterSeconds: 2 };
    case 'failed':
    case 'cancelled':
      return { kind: 'not_ready' };
    case 'expired':
      return { kind: 'job_expired' };
    case 'succeeded': {
      const terminal = job.terminalAt?.getTime() ?? 0;
      if (job.resultPurged || now.getTime() >= terminal + policy.resultTtlSeconds * 1000)
        return { kind: 'result_expired' };
      return { kind: 'ready' };
    }
  }
}
