import type { JobErrorCode } from '@dnc/api-contract/limits';
import { Code, ConnectError, readPublicReason } from '@dnc/kit';

/**
 * Why a job could not finish, in internal terms, and the public JobError it maps to (spec "Errors":
 * internal-to-public mapping for durable jobs).
 */
export type FailureCause =
  | { kind: 'maintenance'; retryAfterSeconds: number }
  | { kind: 'country_unavailable'; retryAfterSeconds: number }
  | { kind: 'inconclusive' }
  | { kind: 'platform' };

export function publicJobError(cause: FailureCause): JobErrorCode {
  switch (cause.kind) {
    case 'maintenance':
      return 'country_service_maintenance';
    case 'country_unavailable':
    case 'inconclusive':
      return 'country_service_temporarily_unavailable';
    case 'platform':
      return 'platform_failure';
  }
}

/** Thrown by a unit when the job must stop with this cause. */
export class JobFailure extends Error {
  constructor(readonly failure: FailureCause) {
    super(`job failed: ${failure.kind}`);
    this.name = 'JobFailure';
  }
}

const RETRYABLE_CODES = new Set([
  Code.Unavailable,
  Code.DeadlineExceeded,
  Code.ResourceExhausted,
  Code.Aborted,
  Code.Internal,
  Code.Unknown,
]);

/**
 * Classify an error of one adapter call: known maintenance is final at once; other country failures
 * may be retried (bounded) and end as `country_unavailable`.
 */
export function classifyAdapterError(error: unknown): { cause: FailureCause; retryable: boolean } {
  const reason = readPublicReason(error);
  if (reason?.reason === 'country_service_maintenance')
    return { cause: { kind: 'maintenance', retryAfterSeconds: reason.retryAfterSeconds }, retryable: false };
  const ce = ConnectError.from(error);
  const retryAfterSeconds = reason?.retryAfterSeconds ?? 0;
  return {
    cause: { kind: 'country_unavailable', retryAfterSeconds },
    retryable: RETRYABLE_CODES.has(ce.code) || reason?.reason === 'country_service_temporarily_unavailable',
  };
}

/** Exponential backoff with full jitter, bounded: attempt 0 waits up to base, then 2x, 4x ... cap. */
export function backoffMs(attempt: number, baseMs = 200, capMs = 5_000, random = Math.random): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** attempt);
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}
