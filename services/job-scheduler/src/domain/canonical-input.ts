import { isUtf8 } from 'node:buffer';
import { LIMITS } from '@dnc/api-contract/limits';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;

const hexValue = (c: number): number =>
  c >= 0x30 && c <= 0x39
    ? c - 0x30
    : c >= 0x61 && c <= 0x66
      ? c - 0x57
      : c >= 0x41 && c <= 0x46
        ? c - 0x37
        : -1;

/** The UTF-16 unit of `\uXXXX` at `at` (the backslash), or -1 when the escape is malformed. */
function unicodeEscape(bytes: Uint8Array, at: number): number {
  if (at + 5 >= bytes.length) return -1;
  let unit = 0;
  for (let k = at + 2; k < at + 6; k++) {
    const h = hexValue(bytes[k]!);
    if (h < 0) return -1;
    unit = (unit << 4) | h;
  }
  return unit;
}

const isHigh = (unit: number) => unit >= 0xd800 && unit <= 0xdbff;
const isLow = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff;

/**
 * One JSON string starting at its opening quote: the index after its closing quote, or -1 when it is
 * malformed or longer than the phone limit, counted in code points as `isPhoneWithinLimit` counts them
 * (a surrogate pair is one, written raw as 4 UTF-8 bytes or as two `\u` escapes).
 */
function phoneString(bytes: Uint8Array, start: number): number {
  // The inputs people send first: printable ASCII but for `"` and `\`, one byte and one character each,
  // at most the limit's worth (then the closing quote must follow). Anything else goes on below.
  let i = start + 1;
  const fastEnd = Math.min(bytes.length, i + LIMITS.maxPhoneLength);
  while (i < fastEnd) {
    const c = bytes[i]!;
    if (c <= QUOTE || c === BACKSLASH || c >= 0x80) break;
    i++;
  }
  if (bytes[i] === QUOTE) return i + 1;
  return phoneStringRest(bytes, i, i - start - 1);
}

/** The rest of a JSON string from `at`, `points` characters already counted (none half a pair). */
function phoneStringRest(bytes: Uint8Array, at: number, points: number): number {
  let highPending = false;
  let i = at;
  for (;;) {
    if (i >= bytes.length) return -1;
    const c = bytes[i]!;
    if (c === QUOTE) return i + 1;
    if (c < 0x20) return -1;
    if (c === BACKSLASH) {
      const e = bytes[i + 1];
      if (e === 0x75) {
        const unit = unicodeEscape(bytes, i);
        if (unit < 0) return -1;
        // A low surrogate right after a high one completes the code point counted with the high one.
        if (!(highPending && isLow(unit))) points++;
        highPending = isHigh(unit);
        i += 6;
      } else if (
        e === QUOTE ||
        e === BACKSLASH ||
        e === 0x2f ||
        e === 0x62 ||
        e === 0x66 ||
        e === 0x6e ||
        e === 0x72 ||
        e === 0x74
      ) {
        points++;
        highPending = false;
        i += 2;
      } else return -1;
    } else {
      // UTF-8 (already checked well formed): every byte but a continuation byte starts a code point.
      if ((c & 0xc0) !== 0x80) {
        points++;
        highPending = false;
      }
      i++;
    }
    if (points > LIMITS.maxPhoneLength) return -1;
  }
}

/**
 * The number of phones of a canonical durable input, or undefined when it is not one: exactly what
 * `JSON.stringify(phones)` writes for an array of at most 500,000 strings of at most 64 characters
 * (no whitespace), in well-formed UTF-8. Checked on the bytes, without building 500,000 strings (the
 * worker parses the input when it runs the job). Stricter than `JSON.parse` (no whitespace, no invalid
 * UTF-8), never more lenient.
 */
export function canonicalPhoneCount(bytes: Uint8Array): number | undefined {
  if (bytes.length < 2 || bytes[0] !== 0x5b || bytes[bytes.length - 1] !== 0x5d) return undefined;
  if (!isUtf8(bytes)) return undefined;
  if (bytes.length === 2) return 0;
  let count = 0;
  let i = 1;
  for (;;) {
    if (bytes[i] !== QUOTE) return undefined;
    i = phoneString(bytes, i);
    if (i < 0 || ++count > LIMITS.v2MaxInputs) return undefined;
    if (i === bytes.length - 1) return count;
    if (bytes[i] !== COMMA) return undefined;
    i++;
  }
}

const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
/** `","`: the end of one element, the comma, the start of the next (where a piece may end). */
const BETWEEN = Buffer.from('","');

/** The phones of `[` + text + `]`, text being whole elements of a canonical input and their commas. */
function parseElements(bytes: Buffer, from: number, to: number): string[] {
  if (from === to) return [];
  return JSON.parse(`[${bytes.toString('utf8', from, to)}]`) as string[];
}

/**
 * The index of the last comma between two elements in `bytes[from, to)`, which start at an element's
 * opening quote, or -1. One pass outside and inside strings (a string may hold `","` itself).
 */
function lastTopLevelComma(bytes: Buffer, from: number, to: number): number {
  let comma = -1;
  let inString = false;
  for (let i = from; i < to; i++) {
    const c = bytes[i];
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === COMMA) comma = i;
  }
  return comma;
}

/**
 * A canonical durable input (see `canonicalPhoneCount`: what the scheduler stored once checked) read
 * piece by piece, as its segments arrive: each `push` gives the phones whose elements are complete so
 * far, in order, and `end` the rest. The phones are exactly those of `JSON.parse` of the whole input:
 * every piece parsed is whole elements cut at a comma between two of them.
 *
 * The cut is found without a pass over the bytes for the inputs people send: the last `","` of the
 * bytes held, taken when `[` + the elements before it + `]` parses (a `","` inside a string, which the
 * element `","` or an escaped quote can make, leaves an unterminated string, so it never parses).
 * Otherwise the bytes are walked once for the last comma between elements.
 */
export class CanonicalInputReader {
  /** The bytes of elements not yet complete: from an element's opening quote, or `]` at the end. */
  private held: Buffer = Buffer.alloc(0);
  private started = false;

  push(segment: Buffer): string[] {
    let bytes = this.held.length > 0 ? Buffer.concat([this.held, segment]) : segment;
    if (!this.started) {
      if (bytes.length === 0) return [];
      if (bytes[0] !== OPEN_BRACKET) throw new Error('the input is not a JSON array');
      this.started = true;
      bytes = bytes.subarray(1);
    }
    let comma = bytes.lastIndexOf(BETWEEN) + 1;
    let phones: string[] | undefined;
    if (comma > 0) {
      try {
        phones = parseElements(bytes, 0, comma);
      } catch {
        comma = lastTopLevelComma(bytes, 0, bytes.length);
      }
    }
    if (comma <= 0) {
      this.held = bytes;
      return [];
    }
    phones ??= parseElements(bytes, 0, comma);
    this.held = bytes.subarray(comma + 1);
    return phones;
  }

  /** The last phones: the rest must be whole elements and the closing bracket, nothing after it. */
  end(): string[] {
    const bytes = this.held;
    if (!this.started || bytes.length === 0 || bytes[bytes.length - 1] !== CLOSE_BRACKET) {
      throw new Error('the input is not a JSON array');
    }
    this.held = Buffer.alloc(0);
    return parseElements(bytes, 0, bytes.length - 1);
  }
}
