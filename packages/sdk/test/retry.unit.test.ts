import { describe, expect, it } from 'vitest';
import { backoffDelay, isRetryableAnswer, parseRetryAfter } from '../src/index.js';

describe('retry policy (spec: Errors, rules)', () => {
  it('retries only 409 in-progress, 429 rate_limit_exceeded and temporarily_blocked, 503, and an ingress 502/504', () => {
    expect(isRetryableAnswer(502, undefined)).toBe(true);
    expect(isRetryableAnswer(504, 'unexpected_response')).toBe(true);
    expect(isRetryableAnswer(503, undefined)).toBe(true);
    expect(isRetryableAnswer(409, 'idempotency_request_in_progress')).toBe(true);
    expect(isRetryableAnswer(429, 'rate_limit_exceeded')).toBe(true);
    // Spec, Errors: "Retry 409 in-progress, 429 and 503"; only the quota's 429 is not to be retried.
    expect(isRetryableAnswer(429, 'temporarily_blocked')).toBe(true);
    // An ingress's own 429 (no body, or a code the contract does not have): retried, as every 429 but quota.
    expect(isRetryableAnswer(429, undefined)).toBe(true);
    expect(isRetryableAnswer(429, 'unexpected_response')).toBe(true);
    expect(isRetryableAnswer(503, 'platform_failure')).toBe(true);
    expect(isRetryableAnswer(503, 'country_service_maintenance')).toBe(true);
    for (const [status, code] of [
      [409, 'idempotency_key_reused'],
      [409, 'job_result_not_ready'],
      [429, 'customer_quota_exceeded'],
      [400, 'validation_error'],
      [401, 'invalid_key'],
      [402, 'subscription_inactive'],
      [403, 'account_suspended'],
      [500, 'internal_error'],
    ] as const) {
      expect(isRetryableAnswer(status, code), code).toBe(false);
    }
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(parseRetryAfter('7')).toBe(7);
    expect(parseRetryAfter(null)).toBeUndefined();
    expect(parseRetryAfter('soon')).toBeUndefined();
    const now = Date.parse('2026-11-21T10:00:00Z');
    expect(parseRetryAfter('Sat, 21 Nov 2026 10:00:30 GMT', now)).toBe(30);
  });

  it('reads nothing else as a date: `1.5`, `-1` or `2026-11-21` are no Retry-After, not "retry at once"', () => {
    // Date.parse reads each of these as a date in the past (a wait of 0).
    for (const value of ['1.5', '-1', '0x10', '1e3', '2026-11-21', 'Nov 21 2026']) {
      expect(parseRetryAfter(value, Date.parse('2026-11-21T10:00:00Z')), value).toBeUndefined();
    }
  });

  it('backs off exponentially within the cap, with jitter', () => {
    const options = (random: number) => ({ baseDelayMs: 100, maxDelayMs: 1_000, random: () => random });
    expect([0, 1, 2, 3, 4, 10].map((a) => backoffDelay(a, options(0)))).toEqual([
      50, 100, 200, 400, 500, 500,
    ]);
    expect([0, 1, 2, 3, 4, 10].map((a) => backoffDelay(a, options(0.999)))).toEqual([
      100, 200, 400, 800, 1000, 1000,
    ]);
  });
});
