import { LIMITS } from '@dnc/api-contract';
import { buildScrubResult, renderScrubResult, summarizeOutcomes } from '@dnc/kit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { durableInput } from '../src/flows/result-estimate.js';
import { readScrubBody } from '../src/flows/scrub-body.js';
import { OUTCOME_CYCLE } from './support/upstream.js';

// A v2 body read on its bytes must give what the JSON parse and the route's schema give for the same
// bytes — the same country, the same phones in order, a durable input that is `JSON.stringify(phones)`
// byte for byte — or decline and leave the body to them. A phone read differently would be scrubbed as
// another number; a body accepted that the schema refuses would skip its 400.

interface Parsed {
  country: unknown;
  phones: unknown;
  keys: string[];
}

function jsonParse(text: string): Parsed | undefined {
  try {
    const value = JSON.parse(text) as Record<string, unknown>;
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
    return { country: value['country'], phones: value['phones'], keys: Object.keys(value) };
  } catch {
    return undefined;
  }
}

/** What the route's schema requires of the phones (DurableScrubRequest), in code points. */
const phonesPassSchema = (phones: unknown): phones is string[] =>
  Array.isArray(phones) &&
  phones.length <= LIMITS.v2MaxInputs &&
  phones.every((p) => typeof p === 'string' && [...p].length <= LIMITS.maxPhoneLength);

function expectSameAsParse(text: string): boolean {
  const read = readScrubBody(Buffer.from(text, 'utf8'), LIMITS.v2MaxInputs);
  if (!read) return false;
  const parsed = jsonParse(text);
  expect(parsed, text).toBeDefined();
  expect(parsed?.keys.sort()).toEqual(['country', 'phones']);
  expect(read.country).toBe(parsed?.country);
  expect(phonesPassSchema(parsed?.phones)).toBe(true);
  const phones = parsed?.phones as string[];
  expect(read.phones.length).toBe(phones.length);
  expect(Array.from({ length: read.phones.length }, (_, i) => read.phones.at(i))).toEqual(phones);
  expect(read.phones.canonical.toString('utf8')).toBe(JSON.stringify(phones));
  // The durable input, the estimate and the count the job stores: as from the parsed phones.
  const fromBytes = durableInput('co', read.phones);
  const fromParse = durableInput('co', phones);
  expect(Buffer.compare(fromBytes.canonical, fromParse.canonical)).toBe(0);
  expect(fromBytes.resultBytes).toBe(fromParse.resultBytes);
  expect(fromBytes.resultRules).toBe(fromParse.resultRules);
  // v1 never makes them strings: its Check's phone_list and its rendered result, as from the parse.
  expect(read.phones.strings()).toEqual(phones);
  expect(Buffer.compare(read.phones.phoneList().bytes, phoneListOf(phones))).toBe(0);
  expect(read.phones.phoneList().count).toBe(phones.length);
  const outcomes = phones.map((_, i) => OUTCOME_CYCLE[i % OUTCOME_CYCLE.length]!);
  const rendered = renderScrubResult(read.phones.runs, outcomes, summarizeOutcomes(outcomes, phones.length));
  expect(rendered.toString('utf8')).toBe(JSON.stringify(buildScrubResult(phones, outcomes)));
  return true;
}

/** `phone_list` as protobuf defines it: each phone's UTF-8 byte length as a varint, then its bytes. */
function phoneListOf(phones: readonly string[]): Buffer {
  const parts: Buffer[] = [];
  for (const phone of phones) {
    const bytes = Buffer.from(phone, 'utf8');
    const varint: number[] = [];
    let n = bytes.length;
    while (n >= 0x80) {
      varint.push((n & 0x7f) | 0x80);
      n >>>= 7;
    }
    varint.push(n);
    parts.push(Buffer.from(varint), bytes);
  }
  return Buffer.concat(parts);
}

const digits = fc.stringMatching(/^[0-9]{7}$/);
const plainPhone = fc.oneof(
  digits.map((d) => `+57300${d}`),
  digits.map((d) => `311 ${d}`),
  digits.map((d) => `(300) ${d.slice(0, 3)}-${d.slice(3)}`),
);
const phone = fc.oneof(
  plainPhone,
  fc.string({
    maxLength: 12,
    unit: fc.constantFrom(
      '"',
      '\\',
      '\u0000',
      '\u001f',
      '\t',
      '\n',
      'é',
      '😀',
      '3',
      '+',
      ']',
      ',',
      ':',
      '{',
      ' ',
    ),
  }),
  fc.constantFrom('phones', '"phones":[', ']', '', 'country', 'x'.repeat(64), 'x'.repeat(65)),
);
/** Mostly JSON's whitespace; now and then a vertical tab, which JSON does not allow between tokens. */
const space = fc.oneof(
  { weight: 30, arbitrary: fc.constantFrom('', '', '', ' ', '\n', '\t', '\r\n  ') },
  { weight: 1, arbitrary: fc.constant('\u000b') },
);
const country = fc.constantFrom(
  '"co"',
  '"co"',
  '"co"',
  '"ar"',
  '"mx"',
  '"zz"',
  '""',
  '"c\to"',
  '7',
  'null',
  '["co"]',
  '"\\u0063o"',
);

/** A body as a client may write it: any whitespace, key order, escapes, a duplicate or extra key. */
const body = fc
  .record({
    // Half the bodies as most clients write them (plain phones, a compact array); half anything.
    phones: fc.oneof(fc.array(plainPhone, { maxLength: 30 }), fc.array(phone, { maxLength: 30 })),
    compact: fc.boolean(),
    // One character written raw into one phone: a control character (not JSON), DEL (JSON), a quote
    // or a backslash (another JSON, or none).
    raw: fc.record({
      char: fc.constantFrom('', '', '', '', '', '', '', '\u0000', '\u001f', '\t', '\n', '\u007f', '"', '\\'),
      at: fc.nat(40),
    }),
    extra: fc.constantFrom(
      'none',
      'none',
      'none',
      'none',
      'none',
      'duplicate-phones',
      'duplicate-country',
      'other-key',
      '__proto__',
    ),
    country,
    countryFirst: fc.boolean(),
    gaps: fc.array(space, { minLength: 10, maxLength: 10 }),
    escapeDigits: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
    trailing: fc.constantFrom('', '', '', '', '', '', ',', ' x', '}'),
  })
  .map(({ phones, compact, raw, extra, country, countryFirst, gaps, escapeDigits, trailing }) => {
    const [a, f, g, h, i, j] = gaps as string[];
    const [b, c, d, e] = compact ? ['', '', '', ''] : gaps.slice(6);
    const escaped = (p: string) =>
      `"${[...p].map((ch) => (/[0-9]/.test(ch) ? `\\u003${ch}` : JSON.stringify(ch).slice(1, -1))).join('')}"`;
    // Raw phones too: a quote, a backslash or a control character left as is (not JSON, or another one).
    const item = (p: string, k: number) =>
      escapeDigits ? escaped(p) : k % 7 === 6 ? `"${p}"` : JSON.stringify(p);
    const items = phones.map(item);
    const k = raw.at % Math.max(1, items.length);
    if (raw.char && items[k]) items[k] = `${items[k].slice(0, -1)}${raw.char}"`;
    const list = `[${b}${items.join(`${c},${d}`)}${e}]`;
    const members = [`"country"${g}:${h}${country}`, `"phones"${a}:${f}${list}`];
    if (extra === 'duplicate-phones') members.push('"phones":["1"]');
    if (extra === 'duplicate-country') members.push('"country":"co"');
    if (extra === 'other-key') members.push('"note":"x"');
    if (extra === '__proto__') members.push('"__proto__":{}');
    const ordered = countryFirst ? members : [...members.slice(1), members[0]];
    return `${i}{${ordered.join(`${j},`)}}${trailing}`;
  });

describe('a scrub body read on its bytes (scrub-body.ts)', () => {
  it('gives what JSON.parse and the schema give, or declines', () => {
    let read = 0;
    fc.assert(
      fc.property(body, (text) => {
        if (expectSameAsParse(text)) read++;
      }),
      { numRuns: 10_000 },
    );
    // The generator makes both kinds (about one body in forty is read): the property is not met by declining everything.
    expect(read).toBeGreaterThan(100);
  });

  it('reads the bodies clients send: compact, or with whitespace around the members', () => {
    const phones = Array.from({ length: 1_000 }, (_, i) => `+57300${String(1_000_000 + i)}`);
    for (const text of [
      JSON.stringify({ country: 'co', phones }),
      JSON.stringify({ phones, country: 'mx' }),
      `{ "country": "co", "phones": ${JSON.stringify(phones)} }\n`,
      `\r\n{\n\t"phones" :${JSON.stringify(['311 123 4567', '(300) 123-4567', 'x'.repeat(64), ''])},\n\t"country" : "zz"\n}`,
    ])
      expect(expectSameAsParse(text), text).toBe(true);
  });

  it('declines what it cannot show equal to the parse, leaving it to the parse and the schema', () => {
    const declined = [
      '{"country":"co","phones":[]}',
      '{"country":"co","phones":[ "+573001234567"]}',
      '{"country":"co","phones":["+573001234567" ,"1"]}',
      '{"country":"co","phones":["+573001234567",\n"1"]}',
      '{"country":"co","phones":["\\u0033001234567"]}',
      '{"country":"co","phones":["3001234567é"]}',
      '{"country":"co","phones":["300\t1234567"]}',
      `{"country":"co","phones":["${'x'.repeat(65)}"]}`,
      '{"country":"co","phones":["1"],"phones":["2"]}',
      '{"country":"co","country":"mx","phones":["1"]}',
      '{"country":"co","phones":["1"],"note":1}',
      '{"country":"co"}',
      '{"phones":["1"]}',
      '{"country":"co","phones":["1"]',
      '{"country":"co","phones":["1"]}}',
      '{"country":"co","phones":["1",]}',
      '{"country":"co","phones":["1"]} x',
      '{"country":1,"phones":["1"]}',
      '{"country":"co","phones":"1"}',
      '{"country":"co","phones":[1]}',
      '{"country":"co","phones":["1"\u000b]}',
      '\ufeff{"country":"co","phones":["1"]}',
      '["co",["1"]]',
      '',
    ];
    for (const text of declined)
      expect(readScrubBody(Buffer.from(text, 'utf8'), LIMITS.v2MaxInputs), text).toBeUndefined();
  });

  it('holds the limits: 500,000 phones of 64 characters are read (v2), one more phone or character is not', () => {
    const at = (count: number, length: number) =>
      Buffer.from(
        JSON.stringify({ country: 'co', phones: Array.from({ length: count }, () => '7'.repeat(length)) }),
      );
    const v2 = LIMITS.v2MaxInputs;
    expect(readScrubBody(at(v2, 1), v2)?.phones.length).toBe(v2);
    expect(readScrubBody(at(v2 + 1, 1), v2)).toBeUndefined();
    expect(readScrubBody(at(3, LIMITS.maxPhoneLength), v2)?.phones.at(2)).toBe('7'.repeat(64));
    expect(readScrubBody(at(3, LIMITS.maxPhoneLength + 1), v2)).toBeUndefined();
  });

  it("holds v1's limit: 10,000 phones are read, 10,001 are left to the schema (its maxItems: 413 payload_too_large)", () => {
    const at = (count: number) =>
      Buffer.from(
        JSON.stringify({ country: 'co', phones: Array.from({ length: count }, () => '3001234567') }),
      );
    const v1 = LIMITS.v1MaxInputs;
    expect(readScrubBody(at(v1), v1)?.phones.length).toBe(v1);
    expect(readScrubBody(at(v1 + 1), v1)).toBeUndefined();
  });

  it('answers `at` as an array does within the length, and undefined outside it', () => {
    const read = readScrubBody(Buffer.from('{"country":"co","phones":["a","","b c"]}'), LIMITS.v1MaxInputs);
    expect([0, 1, 2].map((i) => read?.phones.at(i))).toEqual(['a', '', 'b c']);
    expect([-1, 3, 1.5].map((i) => read?.phones.at(i))).toEqual([undefined, undefined, undefined]);
  });
});
