import { isPhoneWithinLimit, LIMITS } from '@dnc/api-contract/limits';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalPhoneCount } from '../src/domain/canonical-input.js';

// The scheduler's check of a durable input, on its bytes, against what it replaces: JSON.parse, an
// array of at most 500,000 strings of at most 64 characters (code points, isPhoneWithinLimit).

function parsedCount(bytes: Uint8Array): number | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length > LIMITS.v2MaxInputs) return undefined;
  for (const p of parsed) if (typeof p !== 'string' || !isPhoneWithinLimit(p)) return undefined;
  return parsed.length;
}

const encode = (phones: unknown[]) => Buffer.from(JSON.stringify(phones), 'utf8');

/** Strings around the 64-character limit: emoji, lone and paired surrogates, escapes, controls. */
const awkward = fc.string({
  unit: fc.constantFrom(
    'a',
    '3',
    '"',
    '\\',
    '/',
    '\u0000',
    '\u001f',
    '\u2028',
    'é',
    '€',
    '😀',
    '\ud83d',
    '\ude00',
  ),
  maxLength: 70,
});
const phone = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 66 }), awkward, fc.string({ maxLength: 70 }));

describe('the canonical durable input, checked on its bytes (spec: v2 limits)', () => {
  it('accepts what the gateway sends exactly when JSON.parse and the phone limit do, with the same count', () => {
    fc.assert(
      fc.property(fc.array(phone, { maxLength: 20 }), (phones) => {
        const bytes = encode(phones);
        expect(canonicalPhoneCount(bytes)).toBe(parsedCount(bytes));
      }),
      { numRuns: 5_000 },
    );
  });

  it('never accepts bytes JSON.parse and the phone limit refuse', () => {
    const mutated = fc
      .tuple(
        fc.array(phone, { maxLength: 6 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 3 }),
      )
      .map(([phones, edits]) => {
        const bytes = encode(phones);
        for (const [at, value] of edits) if (bytes.length > 0) bytes[at % bytes.length] = value;
        return bytes;
      });
    fc.assert(
      fc.property(fc.oneof(mutated, fc.uint8Array({ maxLength: 40 })), (bytes) => {
        const count = canonicalPhoneCount(bytes);
        if (count !== undefined) expect(parsedCount(bytes)).toBe(count);
      }),
      { numRuns: 20_000 },
    );
  });

  it('at the limits: 64 characters (emoji count one) and 500,000 inputs; one more of either is refused', () => {
    const at64 = ['😀'.repeat(64), 'x'.repeat(64), '\\'.repeat(64), '\ud83d'.repeat(64)];
    for (const p of at64) expect(canonicalPhoneCount(encode([p]))).toBe(1);
    for (const p of at64.map((x) => `${x}y`)) expect(canonicalPhoneCount(encode([p]))).toBeUndefined();
    // Escaped lone surrogates are one character each, as JSON.parse reads them and JSON.stringify writes them.
    const lone = (n: number) => Buffer.from(`["${'\\ud83d'.repeat(n)}"]`);
    expect(canonicalPhoneCount(lone(64))).toBe(1);
    expect(parsedCount(lone(64))).toBe(1);
    expect(canonicalPhoneCount(lone(65))).toBeUndefined();
    const many = new Array<string>(LIMITS.v2MaxInputs).fill('+573001234567');
    expect(canonicalPhoneCount(encode(many))).toBe(LIMITS.v2MaxInputs);
    expect(canonicalPhoneCount(encode([...many, '1']))).toBeUndefined();
    expect(canonicalPhoneCount(encode([]))).toBe(0);
  });

  it('plain ASCII runs (read a byte at a time) followed by anything else count as JSON.parse does', () => {
    const tails = ['', '"', '\\', ' ', '!', '\u0000', '\u007f', 'é', '😀', '\ud83d', '\ude00', '\u2028'];
    for (const run of [0, 1, 40, 62, 63, 64, 65]) {
      for (const tail of tails) {
        for (const rest of ['', 'x', 'y'.repeat(30)]) {
          const bytes = encode([`${'7'.repeat(run)}${tail}${rest}`, '+573001234567']);
          expect(canonicalPhoneCount(bytes)).toBe(parsedCount(bytes));
        }
      }
    }
    // A quote inside the run is escaped, never taken for the end of the string.
    expect(canonicalPhoneCount(Buffer.from('["12\\"34"]'))).toBe(1);
    expect(canonicalPhoneCount(Buffer.from('["12"34"]'))).toBeUndefined();
  });

  it('refuses what JSON.stringify never writes: whitespace, other values, invalid UTF-8', () => {
    for (const text of ['[ "1"]', '["1" ]', '["1",2]', '{"a":"1"}', '[null]', '["1",]', '[', '', '"1"'])
      expect(canonicalPhoneCount(Buffer.from(text))).toBeUndefined();
    expect(canonicalPhoneCount(Uint8Array.from([0x5b, 0x22, 0xc3, 0x22, 0x5d]))).toBeUndefined();
  });

  it('refuses an escape JSON.stringify would not write: the worker reads the input as exactly its output', () => {
    // Valid JSON all, each the same phones JSON.stringify writes another way.
    const written = [
      String.raw`["\/"]`,
      String.raw`["\u0041"]`,
      String.raw`["\u0022"]`,
      String.raw`["\u000a"]`,
      String.raw`["\u001F"]`,
      String.raw`["\uD83D"]`,
      String.raw`["\ud83d\ude00"]`,
      String.raw`["1","\u00e9"]`,
    ];
    for (const text of written) {
      expect(parsedCount(Buffer.from(text)), text).toBeDefined();
      expect(canonicalPhoneCount(Buffer.from(text)), text).toBeUndefined();
    }
    for (const text of [String.raw`["\"\\\n\u001f"]`, String.raw`["\ud83d"]`, String.raw`["\ude00x"]`])
      expect(canonicalPhoneCount(Buffer.from(text)), text).toBe(1);
  });

  it('whatever it accepts is JSON.stringify of the phones it holds, byte for byte', () => {
    const part = fc.constantFrom(
      '1',
      '"',
      '\\',
      '\\/',
      '\\u0041',
      '\\u001f',
      '\\n',
      '\\ud83d',
      '\\ude00',
      'é',
    );
    const bytes = fc.array(part, { maxLength: 8 }).map((parts) => Buffer.from(`["${parts.join('')}","2"]`));
    fc.assert(
      fc.property(bytes, (b) => {
        if (canonicalPhoneCount(b) === undefined) return;
        const text = b.toString('utf8');
        expect(JSON.stringify(JSON.parse(text))).toBe(text);
      }),
      { numRuns: 5_000 },
    );
  });
});
