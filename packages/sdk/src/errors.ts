import type { JobError, ScrubJobStatus } from './types.js';

/** An HTTP error answered by the service: `code` is the stable public error code. */
export class DncApiError extends Error {
  override readonly name = 'DncApiError';
  readonly status: number;
  readonly code: string;
  /** Seconds from the `Retry-After` header, when present. */
  readonly retryAfter: number | undefined;

  constructor(status: number, code: string, message: string, retryAfter: number | undefined) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

/** The service could not be reached (connection error or per-attempt timeout) after the allowed retries. */
export class DncConnectionError extends Error {
  override readonly name = 'DncConnectionError';
  readonly code = 'connection_failed';
}

/** `jobs.wait` gave up after `maxWaitMs`; the job keeps running on the service. */
export class DncWaitTimeoutError extends Error {
  override readonly name = 'DncWaitTimeoutError';
  readonly code = 'wait_timeout';
  constructor(readonly job: ScrubJobStatus) {
    super(`job ${job.job_id} is still ${job.status} after the maximum wait`);
  }
}

/** A job ended without a result (`failed`, `expired` or `cancelled`). `code` is the JobError code or `job_cancelled`. */
export class DncJobError extends Error {
  override readonly name = 'DncJobError';
  readonly code: JobError['error'] | 'job_cancelled';
  constructor(readonly job: ScrubJobStatus) {
    const code = job.error?.error ?? 'job_cancelled';
    super(job.error?.message ?? `job ${job.job_id} ended ${job.status}`);
    this.code = code;
  }
}
