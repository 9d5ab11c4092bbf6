import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalFromBody } from '../src/flows/canonical-input.js';
import { durableInput } from '../src/flows/result-estimate.js';

// Spec, v2: the durable input is the phones in order; the gateway hashes it (the fingerprint) and the
// scheduler stores it. Taken from the body's bytes, it must be byte for byte `JSON.stringify(phones)`,
// whatever the client's spelling of the JSON: otherwise the same request would get two fingerprints.

const serialized = (phones: readonly string[]) => Buffer.from(JSON.stringify(phones), 'utf8');

/** What `canonicalFromBody` sees: the body's bytes and the phones the gateway's JSON parse kept. */
function fromBody(text: string): { canonical: Buffer | undefined; phones: string[] } {
  const phones = (JSON.parse(text) as { phones: string[] }).phones;
  return { canonical: canonicalFromBody(Buffer.from(text, 'utf8'), phones), phones };
}

const digits = fc.stringMatching(/^[0-9]{7}$/);
const phone = fc.oneof(
  digits.map((d) => `+57300${d}`),
  digits.map((d) => `311 ${d}`),
  fc.string({
    maxLength: 12,
    unit: fc.constantFrom('"', '\\', '\u0000', '\t', 'é', '😀', '3', '+', ']', ',', ':'),
  }),
  fc.constantFrom('phones', '"phones":[', ']', ''),
);
const space = fc.constantFrom('', '', '', ' ', '\n', '\t', '\r\n  ');

/** A body as a client may write it: any whitespace, key order, escapes, a duplicate key. */
const body = fc
  .record({
    phones: fc.array(phone, { maxLength: 30 }),
    // An earlier duplicate key: none, any array, or the same phones reversed (the same length).
    earlier: fc.constantFrom('none', 'other', 'reversed'),
    other: fc.array(phone, { maxLength: 3 }),
    countryFirst: fc.boolean(),
    gaps: fc.array(space, { minLength: 8, maxLength: 8 }),
    escapeAll: fc.boolean(),
  })
  .map(({ phones, earlier: which, other, countryFirst, gaps, escapeAll }) => {
    const earlier = which === 'none' ? undefined : which === 'other' ? other : [...phones].reverse();
    const [a, b, c, d, e, f, g, h] = gaps as [string, string, string, string, string, string, string, string];
    // Digits written as \u003N: the same string, other bytes.
    const escaped = (p: string) =>
      `"${[...p].map((ch) => (/[0-9]/.test(ch) ? `\\u003${ch}` : JSON.stringify(ch).slice(1, -1))).join('')}"`;
    const list = (items: string[]) =>
      `[${b}${items.map((p) => (escapeAll ? escaped(p) : JSON.stringify(p))).join(`${c},${d}`)}${e}]`;
    const phonesMember = `"phones"${a}:${f}${list(phones)}`;
    const members = [`"country"${g}:"co"`, ...(earlier ? [`"phones":${list(earlier)}`] : []), phonesMember];
    const ordered = countryFirst ? members : [...members.slice(1), members[0]];
    return `{${h}${ordered.join(',')}}`;
  });

describe('the durable input taken from the body (canonical-input.ts)', () => {
  it('is JSON.stringify(phones) byte for byte whenever it is taken from the body', () => {
    fc.assert(
      fc.property(body, (text) => {
        const { canonical, phones } = fromBody(text);
        if (canonical) expect(Buffer.compare(canonical, serialized(phones))).toBe(0);
        // And the durable input the job stores is that, whichever way it was made.
        expect(
          Buffer.compare(durableInput('co', phones, Buffer.from(text)).canonical, serialized(phones)),
        ).toBe(0);
      }),
      { numRuns: 2_000 },
    );
  });

  it('is taken from a compact body of plain numbers, the way the SDK and most clients send it', () => {
    const phones = Array.from({ length: 1_000 }, (_, i) => `+57300${String(1_000_000 + i)}`);
    for (const text of [
      JSON.stringify({ country: 'co', phones }),
      JSON.stringify({ phones, country: 'co' }),
      `{ "country": "co", "phones": ${JSON.stringify(phones)} }`,
      `{"country":"co","phones":[]}`,
    ]) {
      const { canonical, phones: parsed } = fromBody(text);
      expect(canonical).toBeDefined();
      expect(canonical?.toString()).toBe(JSON.stringify(parsed));
    }
  });

  it('is not taken when the bytes are not the serialization', () => {
    const cases = [
      // Whitespace inside the array (also inside a phone: the check is on every byte).
      '{"country":"co","phones":[ "+573001234567"]}',
      '{"country":"co","phones":["+573001234567" ,"1"]}',
      '{"country":"co","phones":["311 1234567"]}',
      // An escape, a non-ASCII byte.
      '{"country":"co","phones":["\\u0033001234567"]}',
      '{"country":"co","phones":["3001234567é"]}',
      // The element "phones" is the last occurrence of the quoted word, not the key.
      '{"country":"co","phones":["phones"]}',
    ];
    for (const text of cases) expect(fromBody(text).canonical, text).toBeUndefined();
    // A duplicate key: JSON.parse keeps the last one, and so does the slice.
    const dup = fromBody('{"country":"co","phones":["1","2"],"phones":["3"]}');
    expect(dup.canonical?.toString()).toBe('["3"]');
    expect(canonicalFromBody(undefined, ['1'])).toBeUndefined();
  });
});
