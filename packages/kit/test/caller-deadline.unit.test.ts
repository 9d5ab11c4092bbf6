import { describe, expect, it } from 'vitest';
import { commitBy } from '../src/caller-deadline.js';
import { createMetricsRegistry } from '../src/metrics.js';

const now = 1_765_000_000_000;

describe('the last moment a call may commit for its caller (commitBy)', () => {
  it('nothing known: never; only a relative time: from arrival', () => {
    expect(commitBy(now, undefined)).toBe(Number.POSITIVE_INFINITY);
    expect(commitBy(now, undefined, 0n)).toBe(Number.POSITIVE_INFINITY);
    expect(commitBy(now, 1_000)).toBe(now + 1_000);
  });

  // Found by a review (2026-12-05): a call whose deadline ran out before its handler began (connect's
  // timeoutMs() is then 0 or less) was taken for one without a deadline, and quota's Commit and Release
  // waited on a locked account up to the statement timeout.
  it('a relative time already out: no time left, not none', () => {
    expect(commitBy(now, 0)).toBe(now);
    expect(commitBy(now, -50)).toBe(now);
    expect(commitBy(now, -50, BigInt(now + 1_000))).toBe(now);
  });

  it('arrived at once: the moment itself', () => {
    expect(commitBy(now, 1_000, BigInt(now + 1_000))).toBe(now + 1_000);
    expect(commitBy(now, undefined, BigInt(now + 1_000))).toBe(now + 1_000);
  });

  it('held on its way: the moment, less the same time again for the answer', () => {
    // Sent with 1 s at now - 300: the relative time alone would end at now + 1000.
    expect(commitBy(now, 1_000, BigInt(now + 700))).toBe(now + 400);
    // Held longer than half its time: already too late.
    expect(commitBy(now, 1_000, BigInt(now + 300))).toBeLessThan(now);
  });

  it("a caller's clock ahead of this one: never later than the relative time", () => {
    expect(commitBy(now, 1_000, BigInt(now + 5_000))).toBe(now + 1_000);
  });

  it('a moment past or absurd: refused or bounded, never a long wait', () => {
    expect(commitBy(now, undefined, 1n)).toBeLessThan(now);
    expect(commitBy(now, undefined, BigInt(now + 10 * 86_400_000))).toBe(now + 3_600_000);
    expect(commitBy(now, 4_000_000_000)).toBe(now + 3_600_000);
  });

  // Clock skew was not measurable (2026-12-05 note): a receiver ahead of its caller by S refuses about 2S
  // early, one behind commits late, and nothing told skew from transit. The arrival lag says it.
  it('counts each call that named its deadline both ways: transit plus how far this clock is ahead', async () => {
    const registry = createMetricsRegistry('lag-test');
    commitBy(now, 1_000, BigInt(now + 998), 'quota.CommitMany'); // 2 ms on the way
    commitBy(now, 1_000, BigInt(now + 700), 'quota.CommitMany'); // 300 ms: held, or this clock ahead
    commitBy(now, 1_000, BigInt(now + 1_400), 'quota.CommitMany'); // this clock 400 ms behind
    commitBy(now, 10_000, BigInt(now + 3_000), 'quota.CommitMany'); // 7 s: late, never counted as early
    commitBy(now, 1_000, undefined, 'quota.CommitMany'); // no moment: not counted
    commitBy(now, undefined, BigInt(now + 1_000), 'quota.CommitMany'); // no relative time: not counted
    // prom-client's values carry the series' name (`_bucket`, `_sum`, `_count`); its type omits it.
    const lag = (await registry.getSingleMetric('dnc_call_arrival_lag_seconds')!.get()).values as Array<{
      metricName?: string;
      labels: Record<string, string | number>;
      value: number;
    }>;
    const bucket = (le: number) =>
      lag.find(
        (v) =>
          v.metricName?.endsWith('_bucket') && v.labels.le === le && v.labels.call === 'quota.CommitMany',
      )?.value;
    const count = lag.find((v) => v.metricName?.endsWith('_count'))?.value;
    expect(count).toBe(4);
    expect(bucket(-1)).toBe(0);
    expect(bucket(-0.25)).toBe(1);
    expect(bucket(0)).toBe(1);
    expect(bucket(0.005)).toBe(2);
    expect(bucket(0.25)).toBe(2);
    expect(bucket(1)).toBe(3);
    expect(bucket(5)).toBe(4);
    const sum = lag.find((v) => v.metricName?.endsWith('_sum'))?.value ?? 0;
    expect(sum).toBeCloseTo(0.002 + 0.3 - 0.4 + 5, 6);
  });
});
