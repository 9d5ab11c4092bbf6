import { checkRequest } from '@dnc/kit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CanonicalInputReader } from '../src/domain/canonical-input.js';
import { InputElements } from '../src/domain/input-elements.js';
import { StreamedInputs } from '../src/worker/input.js';

// The worker reads a job's input segment by segment and its first units run while the rest is read
// (issue 18: the whole input was read and parsed before the first adapter call). The phones must be
// exactly JSON.parse's of the whole input, wherever the segments cut it (a cut may fall inside a string,
// an escape or a UTF-8 character), whatever the phones hold (`","`, escaped quotes, backslashes).

const encode = (phones: string[]) => Buffer.from(JSON.stringify(phones), 'utf8');

/** The bytes cut at the given positions (sorted, deduplicated, within the bytes). */
function cut(bytes: Buffer, at: number[]): Buffer[] {
  const points = [...new Set(at.map((a) => a % (bytes.length + 1)))].sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const p of points) {
    pieces.push(bytes.subarray(from, p));
    from = p;
  }
  pieces.push(bytes.subarray(from));
  return pieces;
}

function readAll(pieces: Buffer[]): string[] {
  const reader = new CanonicalInputReader();
  const phones: string[] = [];
  for (const p of pieces) phones.push(...reader.push(p).strings());
  phones.push(...reader.end().strings());
  return phones;
}

/** Phones that put `","`, quotes and backslashes where a cut looks for the end of an element. */
const tricky = fc.string({
  unit: fc.constantFrom('"', ',', '\\', '3', '+', ' ', '😀', 'é', '\u0000', '\ud83d'),
  maxLength: 12,
});
const phone = fc.oneof(tricky, fc.string({ maxLength: 20 }), fc.constant('","'), fc.constant('\\'));

async function* segmentsOf(pieces: Buffer[], onEach?: (i: number) => Promise<void>) {
  for (let i = 0; i < pieces.length; i++) {
    await onEach?.(i);
    yield pieces[i]!;
  }
}

describe('CanonicalInputReader: the canonical input parsed piece by piece', () => {
  it('gives exactly JSON.parse of the whole input, wherever the pieces are cut', () => {
    fc.assert(
      fc.property(fc.array(phone, { maxLength: 30 }), fc.array(fc.nat(), { maxLength: 12 }), (phones, at) => {
        expect(readAll(cut(encode(phones), at))).toEqual(phones);
      }),
      { numRuns: 5_000 },
    );
  });

  it('gives each complete element as soon as the piece holding its end has arrived', () => {
    const reader = new CanonicalInputReader();
    expect(reader.push(Buffer.from('["+5215512345678","55 1234')).strings()).toEqual(['+5215512345678']);
    expect(reader.push(Buffer.from(' 5678","x')).strings()).toEqual(['55 1234 5678']);
    expect(reader.push(Buffer.from('"]')).strings()).toEqual([]);
    expect(reader.end().strings()).toEqual(['x']);
  });

  it('reads the empty input and refuses what is not a whole JSON array', () => {
    expect(readAll([Buffer.from('[]')])).toEqual([]);
    expect(readAll([Buffer.from('['), Buffer.from(']')])).toEqual([]);
    expect(() => readAll([Buffer.from('"a"]')])).toThrow();
    expect(() => readAll([Buffer.from('["a","b"')])).toThrow();
    expect(() => readAll([Buffer.from('["a","b"]x')])).toThrow();
    expect(() => readAll([])).toThrow();
  });
});

/** The input read as a job reads it, its pieces' elements in order. */
function elementsOf(pieces: Buffer[]): InputElements {
  const reader = new CanonicalInputReader();
  const parts = pieces.map((p) => reader.push(p));
  parts.push(reader.end());
  return InputElements.concat(parts);
}

describe("CanonicalInputReader: the phones kept as the input's bytes", () => {
  // The worker sends a unit's phones to the adapter and writes them into the result from the input's
  // bytes, never as strings: both must be exactly what the strings would have given.
  const anyPhone = fc.oneof(phone, fc.string({ unit: 'binary', maxLength: 20 }));

  it("gives any unit's phone_list exactly as it is written from the phones as strings", () => {
    fc.assert(
      fc.property(
        fc.array(anyPhone, { maxLength: 30 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        fc.nat(),
        fc.nat(),
        (phones, at, a, b) => {
          const elements = elementsOf(cut(encode(phones), at));
          const from = a % (phones.length + 1);
          const to = from + (b % (phones.length - from + 1));
          const unit = elements.slice(from, to);
          expect(unit.length).toBe(to - from);
          const list = unit.phoneList();
          expect(list.count).toBe(to - from);
          const expected = checkRequest('co', phones.slice(from, to), 'phone_list').phoneList;
          expect(Buffer.from(list.bytes).equals(Buffer.from(expected))).toBe(true);
          // And as `phones`, for an adapter that does not read phone_list.
          const tagged = (p: readonly string[] | typeof list) =>
            checkRequest('co', p, 'phones').$unknown ?? [];
          expect(tagged(list)).toEqual(tagged(phones.slice(from, to)));
        },
      ),
      { numRuns: 3_000 },
    );
  });

  it('refuses what JSON.stringify of an array of strings never writes', () => {
    const refused = [
      String.raw`["\/"]`, // an escape JSON.stringify does not write ("/" is written as it is)
      String.raw`["\u0041"]`, // "A" escaped
      String.raw`["\ud83D"]`, // a lone surrogate, but not in JSON.stringify's lower case
      String.raw`["\x"]`, // no such escape
      '["a",]',
      '["a", "b"]',
      '[ "a"]',
      '["a"\n]',
      '["a"]x',
      '[1]',
    ];
    for (const text of refused) {
      expect(() => elementsOf([Buffer.from(text, 'utf8')]), text).toThrow();
    }
    // A control character written raw, and bytes that are not UTF-8.
    expect(() => elementsOf([Buffer.from('["a\u0001b"]')])).toThrow();
    expect(() => elementsOf([Buffer.from([0x5b, 0x22, 0xff, 0x22, 0x5d])])).toThrow();
    expect(() => elementsOf([Buffer.from([0x5b, 0x22, 0xff, 0x22, 0x2c, 0x22, 0x22, 0x5d])])).toThrow();
    // What it does write is read: escapes, a lone surrogate, U+2028, raw UTF-8.
    const written = ['a"b\\c', '\n\t\u0001', '\ud83d', '\u2028', 'é😀'];
    expect(elementsOf([encode(written)]).strings()).toEqual(written);
  });
});

describe('StreamedInputs: units wait for their phones only', () => {
  const phones = Array.from({ length: 1_000 }, (_, i) => `+52155${String(i).padStart(8, '0')}`);

  it('makes the first phones ready before the last segment is read, and all of them at the end', async () => {
    const pieces = cut(encode(phones), [4_000, 8_000, 12_000]);
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    // The last segment is held back until the first phones were taken.
    const inputs = new StreamedInputs(
      phones.length,
      segmentsOf(pieces, (i) => (i === pieces.length - 1 ? gate : Promise.resolve())),
      new AbortController().signal,
    );
    await inputs.ready(100);
    expect(inputs.slice(0, 100).strings()).toEqual(phones.slice(0, 100));
    let allRead = false;
    const all = inputs.complete().then(() => {
      allRead = true;
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(allRead).toBe(false);
    release();
    await all;
    expect(inputs.slice(0, phones.length).strings()).toEqual(phones);
    // A unit may span the pieces the input was read in.
    expect(inputs.slice(200, 900).strings()).toEqual(phones.slice(200, 900));
    await inputs.ready(phones.length);
  });

  it('refuses an input that does not hold its count, and one that cannot be read', async () => {
    const short = new StreamedInputs(
      phones.length + 1,
      segmentsOf([encode(phones)]),
      new AbortController().signal,
    );
    await expect(short.ready(phones.length + 1)).rejects.toThrow(/count/);
    await expect(short.complete()).rejects.toThrow(/count/);
    const long = new StreamedInputs(10, segmentsOf([encode(phones)]), new AbortController().signal);
    await expect(long.complete()).rejects.toThrow(/count/);

    const broken = new Error('connection lost');
    const failing = new StreamedInputs(
      phones.length,
      segmentsOf(cut(encode(phones), [5_000]), async (i) => {
        if (i === 1) throw broken;
      }),
      new AbortController().signal,
    );
    await expect(failing.ready(phones.length)).rejects.toBe(broken);
    await expect(failing.ready(1)).rejects.toBe(broken);
  });

  it('stops reading when aborted: the segments are closed and the waiting units rejected', async () => {
    let closed = false;
    let yielded = 0;
    async function* slow() {
      try {
        for (const p of cut(encode(phones), [3_000, 6_000, 9_000, 12_000])) {
          yielded++;
          yield p;
          await new Promise((r) => setTimeout(r, 30));
        }
      } finally {
        closed = true;
      }
    }
    const abort = new AbortController();
    const inputs = new StreamedInputs(phones.length, slow(), abort.signal);
    await inputs.ready(10);
    const waiting = inputs.ready(phones.length);
    const stopped = new Error('stopped');
    abort.abort(stopped);
    await expect(waiting).rejects.toBe(stopped);
    await expect(inputs.complete()).rejects.toBe(stopped);
    expect(closed).toBe(true);
    expect(yielded).toBeLessThan(5);
  });
});
