import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CanonicalInputReader } from '../src/domain/canonical-input.js';
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
  for (const p of pieces) phones.push(...reader.push(p));
  phones.push(...reader.end());
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
    expect(reader.push(Buffer.from('["+5215512345678","55 1234'))).toEqual(['+5215512345678']);
    expect(reader.push(Buffer.from(' 5678","x'))).toEqual(['55 1234 5678']);
    expect(reader.push(Buffer.from('"]'))).toEqual([]);
    expect(reader.end()).toEqual(['x']);
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
    expect(inputs.slice(0, 100)).toEqual(phones.slice(0, 100));
    let allRead = false;
    const all = inputs.all().then((p) => {
      allRead = true;
      return p;
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(allRead).toBe(false);
    release();
    expect(await all).toEqual(phones);
    await inputs.ready(phones.length);
  });

  it('refuses an input that does not hold its count, and one that cannot be read', async () => {
    const short = new StreamedInputs(
      phones.length + 1,
      segmentsOf([encode(phones)]),
      new AbortController().signal,
    );
    await expect(short.ready(phones.length + 1)).rejects.toThrow(/count/);
    await expect(short.all()).rejects.toThrow(/count/);
    const long = new StreamedInputs(10, segmentsOf([encode(phones)]), new AbortController().signal);
    await expect(long.all()).rejects.toThrow(/count/);

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
    await expect(inputs.all()).rejects.toBe(stopped);
    expect(closed).toBe(true);
    expect(yielded).toBeLessThan(5);
  });
});
