import { describe, expect, it } from 'vitest';
import {
  abuseThreshold,
  decideRate,
  degradedLimit,
  secondsToReset,
  windowOf,
} from '../src/domain/rate-window.js';

describe('technical rate window (issue 3 item 5)', () => {
  it('windows are aligned to the epoch; reset is the next window start', () => {
    const w = windowOf(Date.parse('2026-11-22T00:00:59.999Z'), 60);
    expect(w.resetUnix).toBe(Date.parse('2026-11-22T00:01:00Z') / 1000);
    expect(w.start).toBe(w.resetUnix - 60);
    expect(windowOf(Date.parse('2026-11-22T00:01:00Z'), 60).start).toBe(w.resetUnix);
  });

  it('Retry-After is at least 1 second', () => {
    expect(secondsToReset(1_000_000_000, 1_000_000)).toBe(1);
    expect(secondsToReset(999_970_500, 1_000_000)).toBe(30);
  });

  it('the limit-th request passes, the next one does not; remaining never below 0', () => {
    const w = windowOf(0, 60);
    expect(decideRate(60, 60, w)).toEqual({ allowed: true, limit: 60, remaining: 0, resetUnix: 60 });
    expect(decideRate(61, 60, w)).toMatchObject({ allowed: false, remaining: 0 });
    expect(decideRate(1, 60, w)).toMatchObject({ allowed: true, remaining: 59 });
  });

  it('degraded per-process limit is a share of the limit, never 0, never unlimited', () => {
    expect(degradedLimit(60, 2)).toBe(30);
    expect(degradedLimit(1, 2)).toBe(1);
    expect(degradedLimit(60_000, 4)).toBe(15_000);
  });

  it('abuse threshold is above the limit', () => {
    expect(abuseThreshold(60, 5)).toBe(300);
    expect(abuseThreshold(1, 1.01)).toBe(2);
  });
});
