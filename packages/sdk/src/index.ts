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
export { DncApiError, DncConnectionError, DncJobError, DncWaitTimeoutError } from './errors.js';
export { backoffDelay, isRetryableAnswer, parseRetryAfter } from './retry.js';
export type * from './types.js';
