export {
  type CallOptions,
  DncClient,
  type DncClientOptions,
  Jobs,
  type RunOptions,
  type ScrubOptions,
  SDK_VERSION,
  type WaitOptions,
} from './client.js';
export {
  DncApiError,
  DncConnectionError,
  DncJobError,
  DncTimeoutError,
  DncWaitTimeoutError,
  type UnexpectedResponseCode,
} from './errors.js';
export {
  API_VERSION,
  COUNTRY_CODES,
  ERROR_CODES,
  IDEMPOTENCY_KEY_PATTERN,
  INVALID_REASONS,
  JOB_ERROR_CODES,
  LIMITS,
  LIVE_COUNTRIES,
  TERMINAL_JOB_STATUSES,
} from './gen/contract.js';
export { backoffDelay, isRetryableAnswer, parseRetryAfter } from './retry.js';
export type { ResponseInfo } from './transport.js';
export type * from './types.js';
