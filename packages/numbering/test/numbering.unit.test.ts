import { createRequire } from 'node:module';
import { registryv1 } from '@dnc/proto';
import { describe, expect, it } from 'vitest';
import {
  classifyReference,
  createNumbering,
  decideFast,
  isRegistryKey,
  type NumberingCountry,
  outcomeOfNormalized,
  TABLES_LIBPHONENUMBER_VERSION,
  UNDECIDED,
} from '../src/index.js';

const { Outcome } = registryv1;

describe('registry keys (normalize)', () => {
  it('decodes normalize() results', () => {
    expect(isRegistryKey(5512345678)).toBe(true);
    expect(isRegistryKey(-Outcome.INVALID_LENGTH)).toBe(false);
    expect(outcomeOfNormalized(-Outcome.INVALID_NUMBER)).toBe(Outcome.INVALID_NUMBER);
    expect(outcomeOfNormalized(5512345678)).toBe(Outcome.UNSPECIFIED);
  });
});

describe('createNumbering', () => {
  it('refuses countries without a numbering plan here and unknown implementations', () => {
    expect(() => createNumbering('es' as NumberingCountry, 'fast')).toThrow(/no numbering plan/);
    expect(() => createNumbering('mx', 'slow' as 'fast')).toThrow(/unknown numbering implementation/);
  });
});

describe('generated tables', () => {
  it('come from the installed libphonenumber-js (regenerate with npm run generate:numbering)', () => {
    const require = createRequire(import.meta.url);
    expect(TABLES_LIBPHONENUMBER_VERSION).toBe(require('libphonenumber-js/package.json').version);
  });
});

describe('fast path coverage', () => {
  // If these fell back, the fast path would be exact but pointless.
  it.each([
    ['mx', '+525512345678'],
    ['mx', '55 1234 5678'],
    ['mx', '(55) 1234-5678'],
    ['mx', '044 55 1234 5678'],
    ['mx', '5215512345678'],
    ['mx', 'tel:+52-55-1234-5678'],
    ['ar', '+5491141234567'],
    ['ar', '011 15 4123 4567'],
    ['ar', '(011) 4123-4567'],
    ['co', '+57 300 123 4567'],
    ['co', '005 57 300 123 4567'],
    ['co', '(601) 234 5678'],
    ['co', '300 123 4567 '],
    ['mx', '55 1234 5678 ext 12'],
    ['ar', '11 4123 4567 int. 23'],
    ['co', '300-123-4567 x5'],
    ['mx', '55\t1234\t5678'],
    ['mx', '+52\u202f55\u202f1234\u202f5678'],
    ['co', '300\u2009123\u20094567\t'],
    ['ar', '+54 11 4123-4567 interno 12'],
    ['ar', '11 4123 4567 Interno: 12'],
    ['mx', ''],
    ['ar', 'n/a'],
    ['co', '+'],
    ['co', '5'],
    ['mx', '+0 55 1234 5678'],
    ['mx', '+1 212 555 0123'],
    ['co', '0057 300 123 4567'],
    ['ar', '+999 1234 5678'],
  ] as const)('decides %s %j without the reference', (country, input) => {
    const decided = decideFast(country, input);
    expect(decided).not.toBe(UNDECIDED);
    expect(decided).toBe(createNumbering(country, 'reference').normalize(input));
  });

  it.each([
    ['mx', '+1 212 555 0123 4567 8901'],
    ['mx', '55 1234 5678;ext=1'],
    ['ar', '11 4123\n4567'],
    ['ar', '11 4123 4567 internos 12'],
    ['co', '55'],
    ['co', '300 123 4567 extension 5'],
  ] as const)('leaves %s %j to the reference', (country, input) => {
    expect(decideFast(country, input)).toBe(UNDECIDED);
  });
});

describe('reference determinism', () => {
  // libphonenumber-js validates RFC 3966 phone-context with stateful global RegExps; see reference.ts.
  it('is deterministic for RFC 3966 phone-context URIs', () => {
    const inputs = [
      'tel:5512345678;phone-context=+52',
      'tel:5512345678;phone-context=example.com',
      'tel:5512345678;phone-context=+52',
      'tel:5512345678;phone-context=+52',
      'tel:5512345678;phone-context=mx.example',
      'tel:5512345678;phone-context=+52',
    ];
    const first = inputs.map((s) => classifyReference('mx', s));
    const again = inputs.map((s) => classifyReference('mx', s));
    expect(again).toEqual(first);
    expect(first[0]).toEqual({ outcome: Outcome.UNSPECIFIED, key: 5512345678, e164: '+525512345678' });
    expect(first[2]).toEqual(first[0]);
    expect(first[3]).toEqual(first[0]);
  });
});
