import { isTerminalJobStatus, type JobStatus, type TerminalJobStatus } from '@dnc/api-contract/limits';

// The spec's job statuses (queued and running active, the rest terminal and final) and the closed
// vocabulary of JobError are the contract's (@dnc/api-contract/limits: JOB_STATUSES, JOB_ERROR_CODES);
// their form on the wire is kit's protoJobStatus / jobStatusOf. This module holds the rules.

/**
 * Every transition the States table allows. A terminal state never changes; `cancelled` is reached
 * from `queued` at once, or from `running` when no external registry call is in progress.
 */
const ALLOWED: Readonly<Record<JobStatus, readonly JobStatus[]>> = {
  queued: ['running', 'cancelled', 'expired'],
  running: ['succeeded', 'failed', 'cancelled', 'expired'],
  succeeded: [],
  failed: [],
  cancelled: [],
  expired: [],
};

export function canTransition(from: JobStatus, to: JobStatus): boolean {
  return ALLOWED[from].includes(to);
}

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
}

/**
 * `expires_at` by state (spec "States"): active jobs expire at admission plus the hard cap; a
 * succeeded job's result at terminalization plus the result TTL; other terminal jobs' metadata at
 * terminalization plus the metadata TTL.
 */
export function expiresAt(
  job: { status: JobStatus; createdAt: Date; terminalAt: Date | null },
  policy: RetentionPolicy,
): Date {
  if (!isTerminalJobStatus(job.status))
    return new Date(job.createdAt.getTime() + policy.hardCapSeconds * 1000);
  const terminal = job.terminalAt ?? job.createdAt;
  const ttl = job.status === 'succeeded' ? policy.resultTtlSeconds : policy.metadataTtlSeconds;
  return new Date(terminal.getTime() + ttl * 1000);
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
