/*
 * Which answers may be retried, and how long to wait. The service description allows automatic retries only for
 * 409 idempotency_request_in_progress, 429 (not customer_quota_exceeded) and 503, with the same idempotency key, honoring
 * Retry-After, with bounded exponential backoff and jitter. Never 400, 401, 402, 403, quota or key reuse.
 * A 502 or 504 comes from an ingress or load balancer in front of the service, not from it: like a dropped
 * connection, the outcome is unknown, so it is retried as a 503 is (same key: an exact retry is never charged twice).
 */
import { ERROR_CODES } from './gen/contract.js';

const GATEWAY_STATUSES = new Set([502, 503, 504]);

export function isRetryableAnswer(status: number, code: string | undefined): boolean {
  if (GATEWAY_STATUSES.has(status)) return true;
  // Spec, Errors: "Retry ... 429 ... honoring Retry-After"; only the quota's 429 is named among those not
  // to retry. A 429 without one of the contract's codes (an ingress's own rate limit) is retried as well.
  if (status === 429) return code !== 'customer_quota_exceeded';
  if (code === undefined || !Object.hasOwn(ERROR_CODES, code)) return false;
  const info = ERROR_CODES[code as keyof typeof ERROR_CODES];
  return info.retryable && info.status === status;
}

/** An HTTP date as RFC 9110 makes it (IMF-fixdate): `Sun, 06 Nov 1994 08:49:37 GMT`. */
const IMF_FIXDATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/**
 * `Retry-After` as seconds: delta-seconds or an HTTP date; undefined when absent or unreadable. Read
 * strictly: `Date.parse` takes `1.5` or `-1` for dates in 2001, which would be a retry at once.
 */
export function parseRetryAfter(
  value: string | null | undefined,
  now: number = Date.now(),
): number | undefined {
  if (value === null || value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  if (!IMF_FIXDATE.test(trimmed)) return undefined;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, Math.ceil((date - now) / 1000));
}

export interface BackoffOptions {
  baseDelayMs: number;
  maxDelayMs: number;
  random: () => number;
}

/** Exponential backoff with "equal jitter": half the capped exponential step plus a random half. */
export function backoffDelay(attempt: number, options: BackoffOptions): number {
  const step = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** attempt);
  return Math.round(step / 2 + options.random() * (step / 2));
}

/** Honor Retry-After: wait at least that long, plus up to 10% jitter so that clients do not return in lockstep. */
export function retryAfterDelay(seconds: number, random: () => number): number {
  const ms = seconds * 1000;
  return Math.round(ms + random() * ms * 0.1);
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
