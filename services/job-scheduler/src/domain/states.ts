import { jobsv1 } from '@dnc/proto';

/** The spec's job states. `queued` and `running` are active; the rest are terminal and final. */
export const JOB_STATES = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'expired'] as const;
export type JobState = (typeof JOB_STATES)[number];
export type ActiveState = 'queued' | 'running';
export type TerminalState = 'succeeded' | 'failed' | 'cancelled' | 'expired';

/** Closed vocabulary of JobError (spec "JobError"). */
export const JOB_ERRORS = [
  'country_service_maintenance',
  'country_service_temporarily_unavailable',
  'platform_failure',
  'job_expired',
] as const;
export type JobErrorCode = (typeof JOB_ERRORS)[number];

export function isTerminal(state: JobState): state is TerminalState {
  return state !== 'queued' && state !== 'running';
}

export function isJobState(value: string): value is JobState {
  return (JOB_STATES as readonly string[]).includes(value);
}

/**
 * Every transition the States table allows. A terminal state never changes; `cancelled` is reached
 * from `queued` at once, or from `running` when no external registry call is in progress.
 */
const ALLOWED: Readonly<Record<JobState, readonly JobState[]>> = {
  queued: ['running', 'cancelled', 'expired'],
  running: ['succeeded', 'failed', 'cancelled', 'expired'],
  succeeded: [],
  failed: [],
  cancelled: [],
  expired: [],
};

export function canTransition(from: JobState, to: JobState): boolean {
  return ALLOWED[from].includes(to);
}

/** What a cancel request does, by the States table. */
export type CancelDecision =
  | { kind: 'cancel_now' }
  | { kind: 'cancel_after_call' }
  | { kind: 'keep_terminal'; state: TerminalState };

export function decideCancel(state: JobState, externalCallsInFlight: number): CancelDecision {
  if (isTerminal(state)) return { kind: 'keep_terminal', state };
  if (state === 'running' && externalCallsInFlight > 0) return { kind: 'cancel_after_call' };
  return { kind: 'cancel_now' };
}

/** What happens to the customer's reservation when a job reaches a terminal state. */
export function quotaSettlementFor(state: TerminalState): 'commit' | 'release' {
  return state === 'succeeded' ? 'commit' : 'release';
}

/** Whether a terminal state carries a JobError: only `failed` and `expired` do, `cancelled` never. */
export function carriesError(state: JobState): boolean {
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
  job: { status: JobState; createdAt: Date; terminalAt: Date | null },
  policy: RetentionPolicy,
): Date {
  if (!isTerminal(job.status)) return new Date(job.createdAt.getTime() + policy.hardCapSeconds * 1000);
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
  job: { status: JobState; terminalAt: Date | null; resultPurged: boolean },
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

const TO_PROTO: Record<JobState, jobsv1.JobStatus> = {
  queued: jobsv1.JobStatus.QUEUED,
  running: jobsv1.JobStatus.RUNNING,
  succeeded: jobsv1.JobStatus.SUCCEEDED,
  failed: jobsv1.JobStatus.FAILED,
  cancelled: jobsv1.JobStatus.CANCELLED,
  expired: jobsv1.JobStatus.EXPIRED,
};

export function toProtoStatus(state: JobState): jobsv1.JobStatus {
  return TO_PROTO[state];
}

export function fromProtoStatus(status: jobsv1.JobStatus): JobState | undefined {
  return JOB_STATES.find((s) => TO_PROTO[s] === status);
}
