// Differential test: the generated fast path must agree with the libphonenumber-js reference on
// outcome, registry key and E.164 for every generated written form. The normal suite runs a sample;
// DNC_DIFFERENTIAL_SAMPLES=1000000 runs the full million per country (npm run test:differential).
// DNC_DIFFERENTIAL_SEED reproduces a run; the seed is printed on failure.
// Deliberate differences between the implementations: none.
// Rules revision 2 reads tabs, Unicode spaces and `interno` (cleanWrittenForm): an input valid as
// libphonenumber-js read it before (classifyUncleaned) keeps its key; revisions 3 and 4 make a second
// number after a `;` or a comma unparseable (hasForeignParameter, hasCommaSecondNumber), the one change of
// an input valid before.
import { describe, expect, it } from 'vitest';
import { prng, writtenForm } from '../scripts/written-forms.mjs';
import {
  classifyReference,
  createNumbering,
  decideFast,
  NUMBERING_COUNTRIES,
  normalizeReference,
  UNDECIDED,
} from '../src/index.js';
import { classifyUncleaned, MAX_EXTENSION_DIGITS } from '../src/reference.js';
import { cleanWrittenForm, hasCommaSecondNumber, hasForeignParameter } from '../src/written-form.js';

const SAMPLES = Number(process.env['DNC_DIFFERENTIAL_SAMPLES'] ?? 20_000);
const SEED = Number(process.env['DNC_DIFFERENTIAL_SEED'] ?? 20_251_122);
const MAX_REPORTED = 10;

describe.each(NUMBERING_COUNTRIES)('fast and reference numbering agree (%s)', (country) => {
  it(`on ${SAMPLES} generated written forms (seed ${SEED})`, {
    timeout: Math.max(60_000, SAMPLES / 2),
  }, async () => {
    const seed = SEED + NUMBERING_COUNTRIES.indexOf(country);
    const random = prng(seed);
    const fast = createNumbering(country, 'fast');
    const mismatches: string[] = [];
    let decided = 0;
    let valid = 0;
    let newlyValid = 0;
    for (let i = 0; i < SAMPLES; i++) {
      // Yield now and then: a worker blocked for minutes misses vitest's RPC heartbeats.
      if (i % 10_000 === 0) await new Promise((resolve) => setImmediate(resolve));
      const input = writtenForm(random, country);
      const expected = classifyReference(country, input);
      const actual = fast.classify(input);
      const normalized = fast.normalize(input);
      if (decideFast(country, input) !== UNDECIDED) decided++;
      if (expected.key > 0) valid++;
      const before = classifyUncleaned(country, input);
      if (expected.key > 0 && before.key === 0) newlyValid++;
      const same =
        actual.outcome === expected.outcome &&
        actual.key === expected.key &&
        actual.e164 === expected.e164 &&
        normalized === normalizeReference(country, input) &&
        // An input valid under revision 1 keeps its key, or (revisions 3, 4) is a second number after a
        // `;`, a comma or an extension label.
        (before.key === 0 ||
          before.key === expected.key ||
          (expected.key === 0 &&
            (hasForeignParameter(cleanWrittenForm(input)) ||
              hasCommaSecondNumber(cleanWrittenForm(input)) ||
              classifyUncleaned(country, cleanWrittenForm(input), MAX_EXTENSION_DIGITS).key === 0)));
      if (!same && mismatches.length < MAX_REPORTED) {
        mismatches.push(
          `#${i} ${JSON.stringify(input)}: fast ${JSON.stringify(actual)} / ${normalized}, reference ${JSON.stringify(expected)}, revision 1 key ${before.key}`,
        );
      }
    }
    if (mismatches.length > 0) {
      throw new Error(
        `fast path disagrees with the reference (country ${country}, seed ${seed}; rerun with DNC_DIFFERENTIAL_SEED=${SEED}):\n${mismatches.join('\n')}`,
      );
    }
    // The sample must exercise both paths and both verdicts, or it proves nothing.
    expect(decided / SAMPLES).toBeGreaterThan(0.5);
    expect(decided).toBeLessThan(SAMPLES);
    expect(valid / SAMPLES).toBeGreaterThan(0.2);
    expect(valid / SAMPLES).toBeLessThan(0.9);
    // ...and the forms revision 2 reads anew.
    expect(newlyValid / SAMPLES).toBeGreaterThan(0.01);
  });
});
