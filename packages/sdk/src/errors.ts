import type { ErrorCode, JobError, ScrubJobStatus } from './types.js';

/**
 * `code` of an answer that is not one of the contract's error bodies: a non-JSON page of a proxy or
 * ingress (e.g. a 502 or 504 in front of the service), or a code this SDK version does not know.
 */
export type UnexpectedResponseCode = 'unexpected_response';

/** An HTTP error answered by the service (or an ingress in front of it). */
export class DncApiError extends Error {
  override readonly name = 'DncApiError';
  readonly status: number;
  /** The stable public error code of the contract (see the troubleshooting guide), or `unexpected_response`. */
  readonly code: ErrorCode | UnexpectedResponseCode;
  /** Seconds from the `Retry-After` header, when present. */
  readonly retryAfter: number | undefined;
  /** The `X-Request-Id` of the answer (or the one this SDK sent): quote it to support. */
  readonly requestId: string | undefined;
  /**
   * The `Idempotency-Key` of the call when it was a `POST /v1/scrub` or `POST /v2/scrub` (the one given, or
   * the one the SDK generated): when the outcome is unknown or the error is retryable, retry with this key
   * to get the first request's answer (or its job) without a second charge. Undefined for other calls.
   */
  idempotencyKey: string | undefined = undefined;

  constructor(
    status: number,
    code: ErrorCode | UnexpectedResponseCode,
    message: string,
    retryAfter: number | undefined,
    requestId?: string,
  ) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
    this.requestId = requestId;
  }
}

/** The service could not be reached (connection error or per-attempt timeout) after the allowed retries. */
export class DncConnectionError extends Error {
  override readonly name = 'DncConnectionError';
  readonly code = 'connection_failed';
  /** The `X-Request-Id` this SDK sent on the last attempt. */
  readonly requestId: string | undefined;
  /**
   * The `Idempotency-Key` of the call when it was a `POST /v1/scrub` or `POST /v2/scrub` (the one given, or
   * the one the SDK generated): when the outcome is unknown or the error is retryable, retry with this key
   * to get the first request's answer (or its job) without a second charge. Undefined for other calls.
   */
  idempotencyKey: string | undefined = undefined;
  constructor(message: string, options: { cause?: unknown; requestId?: string } = {}) {
    super(message, { cause: options.cause });
    this.requestId = options.requestId;
  }
}

/** The call's own `timeoutMs` passed (retries and waits included). The outcome of a POST may be unknown: retry it with the same idempotency key. */
export class DncTimeoutError extends Error {
  override readonly name = 'DncTimeoutError';
  readonly code = 'timeout';
  /** The `X-Request-Id` of the last attempt. */
  readonly requestId: string | undefined;
  /**
   * The `Idempotency-Key` of the call when it was a `POST /v1/scrub` or `POST /v2/scrub` (the one given, or
   * the one the SDK generated): when the outcome is unknown or the error is retryable, retry with this key
   * to get the first request's answer (or its job) without a second charge. Undefined for other calls.
   */
  idempotencyKey: string | undefined = undefined;
  constructor(message: string, requestId: string | undefined) {
    super(message);
    this.requestId = requestId;
  }
}

/** `jobs.wait` gave up after `maxWaitMs`; the job keeps running on the service. */
export class DncWaitTimeoutError extends Error {
  override readonly name = 'DncWaitTimeoutError';
  readonly code = 'wait_timeout';
  /** From `jobs.run`: the key its job was created with (`run` or `create` again with it: the same job). */
  idempotencyKey: string | undefined = undefined;
  constructor(readonly job: ScrubJobStatus) {
    super(`job ${job.job_id} is still ${job.status} after the maximum wait`);
  }
}

/** A job ended without a result (`failed`, `expired` or `cancelled`). `code` is the JobError code or `job_cancelled`. */
export class DncJobError extends Error {
  override readonly name = 'DncJobError';
  readonly code: JobError['error'] | 'job_cancelled';
  constructor(readonly job: ScrubJobStatus) {
    // A cancelled job never carries a JobError; a failed or expired one always does (the spec). Without
    // one, its state still says which: never reported as a cancellation.
    const code =
      job.error?.error ??
      (job.status === 'cancelled'
        ? 'job_cancelled'
        : job.status === 'expired'
          ? 'job_expired'
          : 'platform_failure');
    super(job.error?.message ?? `job ${job.job_id} ended ${job.status}`);
    this.code = code;
  }
}
