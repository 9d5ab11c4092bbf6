import { ConfigError, parseConfig } from '@dnc/kit';
import { describe, expect, it } from 'vitest';
import { jobsConfig } from '../src/config.js';

// Found by a review (2026-12-03): the hard cap and the retention periods took up to a year (the chart's
// schema had no maximum), so a setting could keep results, job metadata and inputs of unfinished jobs far
// past the spec's periods. The spec: "Retention and TTL values are initial policy; a country or legal
// requirement may shorten them" — never lengthen them.
const base = {
  DNC_KEKS: `k1:${Buffer.alloc(32, 1).toString('base64')}`,
  DNC_KEK_ACTIVE_ID: 'k1',
  DNC_INSECURE_PLAINTEXT: '1',
};
const LIMITS = {
  DNC_JOB_HARD_CAP_SECONDS: 86_400,
  DNC_RESULT_TTL_SECONDS: 604_800,
  DNC_METADATA_TTL_SECONDS: 2_592_000,
} as const;
/** A result kept 1 s whose purge waits 2 x 0.5 s: 2 s in all. */
const SHORT_RESULT = { DNC_RESULT_TTL_SECONDS: '1', DNC_RESULT_STREAM_MAX_MS: '500' };

describe('v2 retention settings never exceed the spec', () => {
  it('defaults to the spec values', () => {
    const c = parseConfig(jobsConfig, base);
    for (const [name, limit] of Object.entries(LIMITS)) expect(c[name as keyof typeof LIMITS]).toBe(limit);
  });

  for (const [name, limit] of Object.entries(LIMITS)) {
    it(`${name}: the spec's ${limit} s and shorter are taken, one second more is refused`, () => {
      expect(parseConfig(jobsConfig, { ...base, [name]: String(limit) })[name as keyof typeof LIMITS]).toBe(
        limit,
      );
      // The metadata TTL is never below the result's retention and its purge's grace (below): 60 s with them.
      const shorter = { ...base, ...SHORT_RESULT, [name]: '60' };
      expect(parseConfig(jobsConfig, shorter)[name as keyof typeof LIMITS]).toBe(60);
      expect(() => parseConfig(jobsConfig, { ...base, [name]: String(limit + 1) })).toThrow(ConfigError);
      expect(() => parseConfig(jobsConfig, { ...base, [name]: String(limit + 1) })).toThrow(name);
    });
  }
});

// Found by a review (2026-12-05): a metadata TTL below the result's TTL plus its purge's grace (twice
// DNC_RESULT_STREAM_MAX_MS) deleted the job, its result with it, inside the result's retention or while a
// download begun before its end still streamed: the job answered 404 where the spec promises the result,
// or 410 job_result_expired, and a download was cut (spec: "A result is always complete").
describe('the metadata outlives the result and its purge grace', () => {
  const withTtls = (result: number, streamMs: number, metadata: number) => ({
    ...base,
    DNC_RESULT_TTL_SECONDS: String(result),
    DNC_RESULT_STREAM_MAX_MS: String(streamMs),
    DNC_METADATA_TTL_SECONDS: String(metadata),
  });

  it('the defaults fit: 30 days against 7 days and 30 minutes', () => {
    expect(parseConfig(jobsConfig, base).DNC_METADATA_TTL_SECONDS).toBe(2_592_000);
  });

  it('at the limit (result TTL + 2 x the longest download) it is taken, one second less is refused', () => {
    expect(parseConfig(jobsConfig, withTtls(86_400, 900_000, 88_200)).DNC_METADATA_TTL_SECONDS).toBe(88_200);
    expect(() => parseConfig(jobsConfig, withTtls(86_400, 900_000, 88_199))).toThrow(ConfigError);
    expect(() => parseConfig(jobsConfig, withTtls(86_400, 900_000, 88_199))).toThrow(
      'DNC_METADATA_TTL_SECONDS',
    );
  });

  it('a download bound not whole seconds rounds the grace up', () => {
    // 2 x 1.5 s = 3 s; 2 x 1.2 s = 2.4 s, kept 3 s.
    expect(parseConfig(jobsConfig, withTtls(4, 1_500, 7)).DNC_METADATA_TTL_SECONDS).toBe(7);
    expect(parseConfig(jobsConfig, withTtls(4, 1_200, 7)).DNC_METADATA_TTL_SECONDS).toBe(7);
    expect(() => parseConfig(jobsConfig, withTtls(4, 1_200, 6))).toThrow(ConfigError);
  });
});
