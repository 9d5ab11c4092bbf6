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
      expect(parseConfig(jobsConfig, { ...base, [name]: '60' })[name as keyof typeof LIMITS]).toBe(60);
      expect(() => parseConfig(jobsConfig, { ...base, [name]: String(limit + 1) })).toThrow(ConfigError);
      expect(() => parseConfig(jobsConfig, { ...base, [name]: String(limit + 1) })).toThrow(name);
    });
  }
});
