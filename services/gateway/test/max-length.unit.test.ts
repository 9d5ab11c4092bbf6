import { DurableScrubRequest, ScrubRequest } from '@dnc/api-contract';
import { Ajv } from 'ajv';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { codePointLength, maxLengthByUnitsFirst } from '../src/max-length.js';

// The gateway's `maxLength` (max-length.ts) skips counting code points when a string has no more UTF-16
// units than the limit. It must answer exactly as Ajv's own keyword: the same verdict and the same
// errors (the 400's message is built from them), for every string, around 64 and 128 units where a
// surrogate pair counts one character and two units.

const options = {
  coerceTypes: false,
  useDefaults: false,
  removeAdditional: false,
  allErrors: false,
} as const;
const stock = new Ajv(options);
const patched = maxLengthByUnitsFirst(new Ajv(options));

/** Strings of code points of one and two units, lone surrogates among them, from 0 to ~140 units. */
const phone = fc.oneof(
  fc.string({ unit: fc.constantFrom('3', '+', '😀', '\ud83d', '\ude00', 'é', ' '), maxLength: 140 }),
  fc.string({ unit: 'grapheme', maxLength: 70 }),
  fc.integer({ min: 60, max: 70 }).map((n) => 'x'.repeat(n)),
  fc.integer({ min: 60, max: 70 }).map((n) => '😀'.repeat(n)),
);

describe("maxLength counted by units first: Ajv's verdict and errors, cheaper", () => {
  it('codePointLength counts as Ajv does (a pair one, a lone surrogate one)', () => {
    expect(codePointLength('😀'.repeat(64))).toBe(64);
    expect(codePointLength('\ud83d'.repeat(3))).toBe(3);
    expect(codePointLength('\ude00\ud83d')).toBe(2);
    expect(codePointLength('')).toBe(0);
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (s) => {
        expect(codePointLength(s)).toBe([...s].length);
      }),
    );
  });

  for (const [name, schema] of [
    ['v1 ScrubRequest', ScrubRequest],
    ['v2 DurableScrubRequest', DurableScrubRequest],
  ] as const) {
    it(`${name}: the same verdict and errors as Ajv's own keyword`, () => {
      const a = stock.compile(schema);
      const b = patched.compile(schema);
      fc.assert(
        fc.property(fc.array(phone, { maxLength: 6 }), (phones) => {
          const body = { country: 'mx', phones };
          expect(b(body)).toBe(a(body));
          expect(b.errors ?? null).toEqual(a.errors ?? null);
        }),
        { numRuns: 3_000 },
      );
    });
  }

  it('at the limit: 64 characters pass, 65 fail with the message the 400 quotes', () => {
    const v = patched.compile(ScrubRequest);
    for (const p of ['x'.repeat(64), '😀'.repeat(64), '\ud83d'.repeat(64)]) {
      expect(v({ country: 'mx', phones: [p] })).toBe(true);
    }
    for (const p of ['x'.repeat(65), '😀'.repeat(65), `${'😀'.repeat(64)}x`]) {
      expect(v({ country: 'mx', phones: ['1', p] })).toBe(false);
      expect(v.errors).toEqual([
        {
          instancePath: '/phones/1',
          schemaPath: '#/properties/phones/items/maxLength',
          keyword: 'maxLength',
          params: { limit: 64 },
          message: 'must NOT have more than 64 characters',
        },
      ]);
    }
  });
});
