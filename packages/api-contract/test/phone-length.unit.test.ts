import { Ajv as AjvDraft07 } from 'ajv';
import { describe, expect, it } from 'vitest';
import { DurableScrubRequest, isPhoneWithinLimit, LIMITS, phoneLength, ScrubRequest } from '../src/index.js';

// Spec, Limits: "max length of one phone string: 64 characters". One definition (issue 14 item 8): a
// character is a Unicode code point, as the OpenAPI document's JSON Schema maxLength counts. The
// gateway validates with the schema (ajv); the job-scheduler and the adapters call isPhoneWithinLimit.
// The two must agree on every input, or an input is admitted and reserved, then refused downstream.

const EMOJI = '\u{1F4DE}'; // one code point, two UTF-16 units
const samples: [string, string][] = [
  ['64 ASCII', 'x'.repeat(64)],
  ['65 ASCII', 'x'.repeat(65)],
  ['64 emoji', EMOJI.repeat(64)],
  ['65 emoji', EMOJI.repeat(65)],
  ['63 emoji + 1 ASCII', `${EMOJI.repeat(63)}1`],
  ['32 emoji + 33 ASCII', `${EMOJI.repeat(32)}${'1'.repeat(33)}`],
  ['64 lone high surrogates', '\uD83D'.repeat(64)],
  ['65 lone low surrogates', '\uDCDE'.repeat(65)],
  ['a low surrogate before a high one (two code points)', `${'\uDCDE\uD83D'.repeat(32)}`],
  ['64 combining marks', 'e\u0301'.repeat(32)],
  ['65 combining marks', `${'e\u0301'.repeat(32)}e`],
  ['64 full-width digits', '\uFF11'.repeat(64)],
  ['empty', ''],
];

describe('one phone length: Unicode code points (spec: Limits; issue 14 item 8)', () => {
  it('64 emoji are 64 characters, 65 are 65; ASCII, combining marks and lone surrogates count one each', () => {
    expect(phoneLength(EMOJI.repeat(64))).toBe(64);
    expect(EMOJI.repeat(64).length).toBe(128);
    expect(isPhoneWithinLimit(EMOJI.repeat(64))).toBe(true);
    expect(isPhoneWithinLimit(EMOJI.repeat(65))).toBe(false);
    expect(isPhoneWithinLimit('x'.repeat(LIMITS.maxPhoneLength))).toBe(true);
    expect(isPhoneWithinLimit('x'.repeat(LIMITS.maxPhoneLength + 1))).toBe(false);
    expect(phoneLength('e\u0301')).toBe(2);
    expect(phoneLength('\uD83D')).toBe(1);
    expect(phoneLength('\uDCDE\uD83D')).toBe(2);
  });

  it.each(samples)(
    'the public schema (ajv, as the gateway validates) agrees with isPhoneWithinLimit: %s',
    (_, phone) => {
      for (const schema of [ScrubRequest, DurableScrubRequest]) {
        const validate = new AjvDraft07({ strict: false }).compile(schema);
        expect(validate({ country: 'mx', phones: [phone] })).toBe(isPhoneWithinLimit(phone));
      }
      expect(isPhoneWithinLimit(phone)).toBe(phoneLength(phone) <= LIMITS.maxPhoneLength);
      expect(phoneLength(phone)).toBe([...phone].length);
    },
  );
});
