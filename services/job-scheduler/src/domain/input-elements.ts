import { type PhoneList, PhoneListWriter } from '@dnc/kit';

/**
 * Consecutive elements of one piece of a job's canonical input, in the input's own bytes: element `i`'s
 * JSON text (its quotes included) is `bytes[starts[i], starts[i + 1] - 1)`, for `first <= i < end` (a
 * comma or the closing bracket after each element, so the next one starts one byte after it ends). An
 * element written with an escape also has its phone's UTF-8 bytes in `decoded`, keyed by where the
 * element starts; every other element's phone is the bytes between its quotes.
 */
export interface ElementRun {
  readonly bytes: Buffer;
  readonly starts: Uint32Array;
  readonly decoded: ReadonlyMap<number, Buffer>;
  readonly first: number;
  readonly end: number;
}

/**
 * A job's phones, or some of them, as the bytes of its canonical input (`JSON.stringify` of its phones:
 * domain/canonical-input.ts) rather than as strings: one run of elements per piece of the input they
 * come from. A 500,000-phone input as strings is 500,000 objects made young and surviving every
 * scavenge while the job runs; as bytes it is the input itself, outside the heap, and what the job does
 * with its phones is copying bytes: the adapter's `phone_list` (`phoneList`) and the result's items,
 * whose text is each element's own (domain/result.ts: `JSON.stringify` of a phone is the element the
 * canonical input holds for it, checked when an escaped element is read).
 */
export class InputElements {
  static readonly EMPTY = new InputElements([], 0);

  private constructor(
    readonly runs: readonly ElementRun[],
    readonly length: number,
  ) {}

  /** All `starts.length - 1` elements of one piece of input bytes. */
  static of(bytes: Buffer, starts: Uint32Array, decoded: ReadonlyMap<number, Buffer>): InputElements {
    const n = starts.length - 1;
    return n <= 0
      ? InputElements.EMPTY
      : new InputElements([{ bytes, starts, decoded, first: 0, end: n }], n);
  }

  /** These elements, then those of `parts` in order. */
  static concat(parts: readonly InputElements[]): InputElements {
    return new InputElements(
      parts.flatMap((p) => p.runs),
      parts.reduce((n, p) => n + p.length, 0),
    );
  }

  /** Elements [from, to) of these. */
  slice(from: number, to: number): InputElements {
    const lo = Math.max(0, from);
    const hi = Math.min(this.length, to);
    if (hi <= lo) return InputElements.EMPTY;
    const runs: ElementRun[] = [];
    let at = 0;
    for (const run of this.runs) {
      const n = run.end - run.first;
      const a = Math.max(lo, at);
      const b = Math.min(hi, at + n);
      if (a < b) runs.push({ ...run, first: run.first + (a - at), end: run.first + (b - at) });
      at += n;
      if (at >= hi) break;
    }
    return new InputElements(runs, hi - lo);
  }

  /** The phones as `CheckRequest.phone_list` carries them: each one's UTF-8 bytes, copied from the input. */
  phoneList(): PhoneList {
    let size = 0;
    for (const { starts, decoded, first, end } of this.runs) {
      for (let i = first; i < end; i++) {
        const s = starts[i]!;
        const escaped = decoded.size > 0 ? decoded.get(s) : undefined;
        size += PhoneListWriter.recordSize(escaped ? escaped.length : starts[i + 1]! - s - 3);
      }
    }
    const writer = new PhoneListWriter(size);
    for (const { bytes, starts, decoded, first, end } of this.runs) {
      for (let i = first; i < end; i++) {
        const s = starts[i]!;
        const escaped = decoded.size > 0 ? decoded.get(s) : undefined;
        if (escaped) writer.add(escaped, 0, escaped.length);
        else writer.add(bytes, s + 1, starts[i + 1]! - 2);
      }
    }
    return writer.finish();
  }

  /** The phones as strings, each element parsed (for tests and checks; the job itself never needs them). */
  strings(): string[] {
    const phones: string[] = [];
    for (const { bytes, starts, first, end } of this.runs) {
      for (let i = first; i < end; i++)
        phones.push(JSON.parse(bytes.toString('utf8', starts[i], starts[i + 1]! - 1)) as string);
    }
    return phones;
  }
}
