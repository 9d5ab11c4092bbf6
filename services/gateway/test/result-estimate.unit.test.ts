import { LIMITS } from '@dnc/api-contract';
import { buildScrubResult, quotedBytes, validatedResultBytes, worstResultBytes } from '@dnc/kit';
import { createNormalizer, NUMBERING_RULES, outcomeOfNormalized } from '@dnc/numbering';
import { registryv1 } from '@dnc/proto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { coJobWithResultOf, renderedResultBytes } from '../../../test/support/v2-sizes.js';
import { durableInput, structuralOutcome } from '../src/flows/result-estimate.js';
import { submitV2 } from '../src/flows/v2-submit.js';
import { budget, fingerprint, inMemoryUpstream } from './support/upstream.js';

// Spec, v2 limits: "a conservative complete-result estimate must stay within 25 MiB". Conservative:
// never below the byte length of the result the job really renders.

const { Outcome } = registryv1;
const LIMIT = LIMITS.maxBodyBytes;
const co = createNormalizer('co');
/** The adapter's outcome for an input (fast path, else the reference parser). */
const structural = (phone: string) => outcomeOfNormalized(co.normalize(phone));
/** What the gateway validates with: the fast path only, undecided inputs counted at their worst. */
const gatewayView = structuralOutcome('co');
const bytesOf = (phones: readonly string[], outcomes: registryv1.Outcome[]) =>
  Buffer.byteLength(JSON.stringify(buildScrubResult(phones, outcomes)), 'utf8');
const quoted = (phones: readonly string[]) =>
  quotedBytes(Buffer.byteLength(JSON.stringify(phones), 'utf8'), phones.length);

/** Inputs as customers write them: valid Colombian numbers in several forms, near misses and junk. */
const digits = (n: number) => fc.stringMatching(new RegExp(`^[0-9]{${n}}$`));
const phone = fc.oneof(
  digits(7).map((d) => `+57300${d}`),
  digits(7).map((d) => `311 ${d.slice(0, 3)} ${d.slice(3)}`),
  digits(7).map((d) => `(601) ${d}`),
  digits(7).map((d) => `0057 320${d}`),
  fc.integer({ min: 1, max: 14 }).chain(digits),
  digits(10).map((d) => `+52${d}`),
  fc.string({ maxLength: 64, unit: 'grapheme' }),
  fc.string({ maxLength: 20, unit: fc.constantFrom('"', '\\', '\u0000', '\u2028', '😀', '3', '+') }),
);

/** Outcomes as the adapter answers them: the rules' invalid outcome, else the registry's choice. */
function answered(phones: readonly string[], registered: readonly boolean[]): registryv1.Outcome[] {
  return phones.map((p, i) => {
    const o = structural(p);
    if (o !== Outcome.UNSPECIFIED) return o;
    return registered[i % registered.length] ? Outcome.PROHIBITED : Outcome.SAFE;
  });
}

describe('the v2 complete-result estimate (spec: v2 limits)', () => {
  it('is never below the rendered result, whatever the registry holds', () => {
    fc.assert(
      fc.property(
        fc.array(phone, { maxLength: 60 }),
        fc.array(fc.boolean(), { minLength: 1 }),
        (phones, registered) => {
          const real = bytesOf(phones, answered(phones, registered));
          expect(validatedResultBytes(phones, quoted(phones), gatewayView, -1).bytes).toBeGreaterThanOrEqual(
            real,
          );
          expect(validatedResultBytes(phones, quoted(phones), structural, -1).bytes).toBeGreaterThanOrEqual(
            real,
          );
        },
      ),
      { numRuns: 1_000 },
    );
  }, 60_000);

  it('is exactly the largest result the registry can make of the inputs', () => {
    fc.assert(
      fc.property(fc.array(phone, { maxLength: 40 }), (phones) => {
        const valid = phones.filter((p) => structural(p) === Outcome.UNSPECIFIED).length;
        let largest = 0;
        // The size depends on how many valid inputs are registered, not on which.
        for (let p = 0; p <= valid; p++) {
          let seen = 0;
          const outcomes = phones.map((x) => {
            const o = structural(x);
            if (o !== Outcome.UNSPECIFIED) return o;
            return seen++ < p ? Outcome.PROHIBITED : Outcome.SAFE;
          });
          largest = Math.max(largest, bytesOf(phones, outcomes));
        }
        expect(validatedResultBytes(phones, quoted(phones), structural, -1).bytes).toBe(largest);
      }),
      { numRuns: 500 },
    );
  }, 60_000);

  it('takes the prohibited/safe split at its largest, for thousands of valid inputs too', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 30_000 }), fc.nat(), (valid, seed) => {
        const phones = Array.from({ length: valid }, (_, i) => `+57300${String(1_000_000 + i)}`);
        phones.push('+5730', 'x');
        const bound = validatedResultBytes(phones, quoted(phones), gatewayView, -1).bytes;
        const sized = (p: number) =>
          bytesOf(
            phones,
            phones.map((x, i) => {
              const o = structural(x);
              return o !== Outcome.UNSPECIFIED ? o : i < p ? Outcome.PROHIBITED : Outcome.SAFE;
            }),
          );
        expect(bound).toBeGreaterThanOrEqual(sized(seed % (valid + 1)));
        // The largest: one side empty, or one side the smallest count of its number of digits.
        let largest = sized(0);
        for (let p = 1; p <= valid; p *= 10) largest = Math.max(largest, sized(p));
        expect(bound).toBe(largest);
      }),
      { numRuns: 60 },
    );
  }, 60_000);

  it('stops validating once the rest fits even at its worst, deciding exactly as the full bound would', () => {
    const phones = Array.from({ length: 100_000 }, (_, i) =>
      i % 3 ? `+57300${String(1_000_000 + i)}` : `x${i}`.padEnd(30, 'y'),
    );
    const q = quoted(phones);
    const exact = validatedResultBytes(phones, q, gatewayView, -1);
    expect(exact.validated).toBe(phones.length);
    for (const limit of [exact.bytes - 1, exact.bytes, exact.bytes + 1, exact.bytes + 500_000, 10 ** 9]) {
      const early = validatedResultBytes(phones, q, gatewayView, limit);
      expect(early.bytes).toBeGreaterThanOrEqual(exact.bytes);
      expect(early.bytes <= limit).toBe(exact.bytes <= limit);
    }
    expect(validatedResultBytes(phones, q, gatewayView, 10 ** 9).validated).toBeLessThan(10_000);
  }, 60_000);

  it('the worst case is never below the result, whatever the adapter answers (registry rejections too)', () => {
    const anyOutcome = fc.constantFrom(
      Outcome.SAFE,
      Outcome.PROHIBITED,
      Outcome.INVALID_UNPARSEABLE,
      Outcome.INVALID_LENGTH,
      Outcome.INVALID_NUMBER,
      Outcome.INVALID_WRONG_COUNTRY,
      Outcome.INVALID_OBSOLETE_FORMAT,
      Outcome.INVALID_REGISTRY_REJECTED,
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(phone, anyOutcome), { maxLength: 60 }),
        fc.integer({ min: 0, max: 3 }),
        (pairs, copies) => {
          // Long runs of one outcome reach counts with more digits.
          const all = Array.from({ length: copies + 1 }, () => pairs).flat();
          const phones = all.map(([p]) => p);
          const outcomes = all.map(([, o]) => o);
          expect(worstResultBytes(phones.length, quoted(phones))).toBeGreaterThanOrEqual(
            bytesOf(phones, outcomes),
          );
        },
      ),
      { numRuns: 1_000 },
    );
  }, 60_000);

  it('admits 500,000 E.164 numbers (8 MB): only inputs the rules reject count as invalid entries', () => {
    const phones = Array.from({ length: 500_000 }, (_, i) => `+573${String(1_000_000_000 + i).slice(1)}`);
    expect(phones[0]).toBe('+573000000000');
    const sizes = durableInput('co', phones);
    expect(worstResultBytes(phones.length, quoted(phones))).toBeGreaterThan(LIMIT);
    expect(sizes.resultBytes).toBeLessThanOrEqual(LIMIT);
    expect(sizes.resultRules).toBe(NUMBERING_RULES);
    expect(sizes.resultBytes).toBeGreaterThanOrEqual(renderedResultBytes('co', phones, new Set(phones)));
  }, 60_000);

  it('keeps the worst case, with no rules to check, when the worst case fits', () => {
    const phones = Array.from({ length: 1_000 }, (_, i) => `+57300${String(1_000_000 + i)}`);
    const sizes = durableInput('co', phones);
    expect(sizes).toMatchObject({ resultBytes: worstResultBytes(1_000, quoted(phones)), resultRules: '' });
    expect(sizes.canonical.toString()).toBe(JSON.stringify(phones));
  });
});

describe('a job whose real result is exactly 25 MiB (spec: v2 limits, at the limit and one byte past)', () => {
  it('26,214,400 bytes is admitted, with the rules admission checks; 26,214,401 is 413 before Admit', async () => {
    const atLimit = coJobWithResultOf(LIMIT);
    expect(durableInput('co', atLimit.phones).resultBytes).toBe(LIMIT);
    const untouched = inMemoryUpstream({});
    const request = (phones: string[]) => ({
      caller: {
        kind: 'authenticated',
        orgId: '0b0b0b0b-0000-4000-8000-000000000001',
        keyId: 'k',
        orgAssertion: 'a',
      } as const,
      idempotencyKey: 'k',
      country: 'co',
      phones,
    });
    let rules: string | undefined;
    const admitted = inMemoryUpstream({
      admit: (req) => {
        rules = req.resultRules;
        return {};
      },
    });
    const ok = await submitV2(
      { upstream: admitted.upstream, fingerprint, log: admitted.log },
      request(atLimit.phones),
      budget(5_000),
    );
    expect(ok.ok).toBe(true);
    expect(rules).toBe(NUMBERING_RULES);

    const past = coJobWithResultOf(LIMIT + 1);
    expect(durableInput('co', past.phones).resultBytes).toBe(LIMIT + 1);
    const refused = await submitV2(
      { upstream: untouched.upstream, fingerprint, log: untouched.log },
      request(past.phones),
      budget(5_000),
    );
    expect(refused).toMatchObject({
      ok: false,
      error: { status: 413, body: { error: 'payload_too_large' } },
    });
    expect(untouched.calls).toEqual([]);
  }, 120_000);
});
