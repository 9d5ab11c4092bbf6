// v2 jobs of a chosen result size, for the 25 MiB boundary of the complete-result estimate (spec: v2
// limits). The inputs are validated with the adapter's own rules (@dnc/numbering) and the result is
// rendered as it is served (JSON.stringify of kit's buildScrubResult), so the sizes are real.
import { buildScrubResult } from '@dnc/kit';
import { createNormalizer, outcomeOfNormalized } from '@dnc/numbering';
import { registryv1 } from '@dnc/proto';

const { Outcome } = registryv1;

/** Byte length of the result the job of `phones` renders when exactly `registered` are in the registry. */
export function renderedResultBytes(
  country: 'mx' | 'ar' | 'co',
  phones: readonly string[],
  registered: ReadonlySet<string>,
): number {
  const normalizer = createNormalizer(country);
  const outcomes = phones.map((p) => {
    const structural = outcomeOfNormalized(normalizer.normalize(p));
    if (structural !== Outcome.UNSPECIFIED) return structural;
    return registered.has(p) ? Outcome.PROHIBITED : Outcome.SAFE;
  });
  return Buffer.byteLength(JSON.stringify(buildScrubResult(phones, outcomes)), 'utf8');
}

/** Digits, far too many for a number: invalid_length, decided by the fast path, whatever its length. */
function junk(i: number, length: number): string {
  return `1${String(i).padStart(7, '0')}`.padEnd(length, '9');
}

export interface SizedJob {
  phones: string[];
  /** Registered valid inputs, written as in `phones` (load them into the registry). */
  registered: string[];
}

/**
 * A Colombian v2 job whose real result is exactly `bytes` long: 150,000 valid E.164 mobiles (+57 311),
 * the first 100,000 of them registered (the prohibited/safe split the estimate takes at its largest,
 * so the estimate is exact for this job), and 301,000 over-long digit strings (invalid_length) whose
 * lengths are tuned to the byte. `bytes` must lie within about ±300,000 of 25 MiB.
 */
export function coJobWithResultOf(bytes: number): SizedJob {
  const valid = Array.from({ length: 150_000 }, (_, i) => `+57311${String(1_000_000 + i)}`);
  const registered = valid.slice(0, 100_000);
  const invalidCount = 301_000;
  const base = 40;
  const invalid = Array.from({ length: invalidCount }, (_, i) => junk(i, base));
  const set = new Set(registered);
  const gap = bytes - renderedResultBytes('co', [...valid, ...invalid], set);
  if (gap < 0 || gap > invalidCount * (64 - base)) throw new Error(`cannot reach ${bytes} bytes`);
  // Each extra digit adds one byte to the result (the reason stays invalid_length).
  for (let i = 0; i < invalidCount; i++) {
    const extra = Math.floor(gap / invalidCount) + (i < gap % invalidCount ? 1 : 0);
    if (extra) invalid[i] = junk(i, base + extra);
  }
  const phones = [...valid, ...invalid];
  const real = renderedResultBytes('co', phones, set);
  if (real !== bytes) throw new Error(`built ${real} bytes instead of ${bytes}`);
  return { phones, registered };
}

/**
 * The admissible v2 job that costs a worker the most heap (issue 14 item 9): the most inputs (500,000)
 * at the most bytes the 25 MiB limits leave, i.e. 500,000 valid Colombian mobiles written with spaces
 * (49 characters each, ~26.0 MB of JSON). The worker holds each input as a string of its own (~72 bytes
 * of V8 heap here, plus its 8-byte slot): ~40 MB per job, against ~28 MB for `coJobWithResultOf(25 MiB)`,
 * whose 451,000 inputs are bounded by the invalid entries' longer result. Valid inputs are counted at
 * their own size in the result estimate, so body, durable input and result all stay within 25 MiB.
 */
export function coLargestHeapJob(count = 500_000, chars = 49): string[] {
  return Array.from({ length: count }, (_, i) => `+57 311 ${String(1_000_000 + i)}`.padEnd(chars, ' '));
}
