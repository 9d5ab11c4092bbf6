import {
  type JobErrorCode,
  type JobStatus,
  type TerminalJobStatus,
  UUID_REGEXP,
} from '@dnc/api-contract/limits';

// A job as the store reads it: the row of jobs.jobs in the names the code uses.

export interface JobRow {
  id: string;
  orgId: string;
  country: string;
  status: JobStatus;
  submittedCount: number;
  reservationId: string;
  createdAt: Date;
  hardCapAt: Date;
  startedAt: Date | null;
  terminalAt: Date | null;
  error: JobErrorCode | null;
  errorRetryAfter: number | null;
  cancelRequested: boolean;
  externalCalls: number;
  leaseToken: string | null;
  attempts: number;
  /** Of `attempts`, the executions a shutting-down worker handed back (they do not count against the limit). */
  handedBack: number;
  dispatchedAt: Date | null;
  dispatchCount: number;
  quotaSettlement: 'commit' | 'release' | null;
  quotaSettledAt: Date | null;
  inputPurgedAt: Date | null;
  resultPurgedAt: Date | null;
  /** The oldest registry snapshot the result was read from (succeeded jobs). */
  registrySnapshotAt: Date | null;
}

export type Raw = Record<string, unknown>;

export function toRow(r: Raw): JobRow {
  return {
    id: r['id'] as string,
    orgId: r['org_id'] as string,
    country: r['country'] as string,
    status: r['status'] as JobStatus,
    submittedCount: r['submitted_count'] as number,
    reservationId: r['reservation_id'] as string,
    createdAt: r['created_at'] as Date,
    hardCapAt: r['hard_cap_at'] as Date,
    startedAt: (r['started_at'] as Date | null) ?? null,
    terminalAt: (r['terminal_at'] as Date | null) ?? null,
    error: (r['error'] as JobErrorCode | null) ?? null,
    errorRetryAfter: (r['error_retry_after'] as number | null) ?? null,
    cancelRequested: r['cancel_requested'] as boolean,
    externalCalls: r['external_calls'] as number,
    leaseToken: (r['lease_token'] as string | null) ?? null,
    attempts: r['attempts'] as number,
    handedBack: r['handed_back'] as number,
    dispatchedAt: (r['dispatched_at'] as Date | null) ?? null,
    dispatchCount: r['dispatch_count'] as number,
    quotaSettlement: (r['quota_settlement'] as 'commit' | 'release' | null) ?? null,
    quotaSettledAt: (r['quota_settled_at'] as Date | null) ?? null,
    inputPurgedAt: (r['input_purged_at'] as Date | null) ?? null,
    resultPurgedAt: (r['result_purged_at'] as Date | null) ?? null,
    registrySnapshotAt: (r['registry_snapshot_at'] as Date | null) ?? null,
  };
}

export function isJobId(value: string): boolean {
  return UUID_REGEXP.test(value);
}

export interface Terminalization {
  to: TerminalJobStatus;
  error?: JobErrorCode;
  retryAfterSeconds?: number;
  note: string;
}

/** SubmitJob of an id admission's reconciler fenced (FenceJob): no job of it will ever be stored. */
export class JobFenced extends Error {
  constructor() {
    super('this job id was fenced: its admission was given up');
  }
}

/** A new job not stored: its caller stopped waiting before its answer could reach it (SubmitJob). */
export class CallerGone extends Error {
  constructor() {
    super('the caller gave up before the job was stored');
  }
}
