// The generated DFA must accept exactly what the libphonenumber-js patterns match (`^(?:p)$`), for the
// national number pattern and every number type, on every short prefix and on random completions.
import { Metadata } from 'libphonenumber-js/max';
import { describe, expect, it } from 'vitest';
import { prng } from '../scripts/written-forms.mjs';
import { NUMBERING_COUNTRIES, patternBits } from '../src/index.js';

// libphonenumber-js getType() order; the DFA uses bit 1 + index.
const TYPES = [
  'FIXED_LINE',
  'MOBILE',
  'TOLL_FREE',
  'PREMIUM_RATE',
  'PERSONAL_NUMBER',
  'VOICEMAIL',
  'UAN',
  'PAGER',
  'VOIP',
  'SHARED_COST',
] as const;

function patternsOf(country: string): Array<[bit: number, pattern: RegExp]> {
  // nationalNumberPattern() and type() are libphonenumber-js internals, not in its type declarations.
  const metadata = new Metadata() as Metadata & {
    nationalNumberPattern(): string;
    type(name: string): { pattern(): string } | undefined;
  };
  metadata.selectNumberingPlan(country.toUpperCase() as 'MX');
  const out: Array<[number, RegExp]> = [[1, new RegExp(`^(?:${metadata.nationalNumberPattern()})$`)]];
  TYPES.forEach((type, index) => {
    const pattern = metadata.type(type)?.pattern();
    if (pattern) out.push([1 << (1 + index), new RegExp(`^(?:${pattern})$`)]);
  });
  return out;
}

describe.each(NUMBERING_COUNTRIES)('generated %s tables', (country) => {
  it('accept exactly the metadata patterns', () => {
    const patterns = patternsOf(country);
    const random = prng(99);
    const digits = (n: number) => {
      let s = '';
      for (let i = 0; i < n; i++) s += String(Math.floor(random() * 10));
      return s;
    };
    const mismatches: string[] = [];
    let accepted = 0;
    let checked = 0;
    const check = (s: string) => {
      const bits = patternBits(country, s);
      let expected = 0;
      for (const [bit, pattern] of patterns) if (pattern.test(s)) expected |= bit;
      checked++;
      if (expected & 1) accepted++;
      if (bits !== expected && mismatches.length < 10)
        mismatches.push(`${s}: dfa ${bits}, patterns ${expected}`);
    };
    // Every prefix of up to 5 digits, each completed to every length from 6 to 13 digits.
    for (let p = 0; p < 100_000; p++) {
      const prefix = String(p).padStart(5, '0');
      check(prefix.slice(0, 1 + (p % 5)));
      check(prefix + digits(1 + (p % 8)));
    }
    for (let i = 0; i < 20_000; i++) check(digits(1 + (i % 17)));
    expect(mismatches).toEqual([]);
    // The completions hit valid ranges often enough for the comparison to mean something.
    expect(accepted).toBeGreaterThan(1000);
    expect(checked - accepted).toBeGreaterThan(1000);
  });
});
