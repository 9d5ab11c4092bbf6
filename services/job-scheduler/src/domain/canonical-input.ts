import { isUtf8 } from 'node:buffer';
import { LIMITS } from '@dnc/api-contract/limits';
import { InputElements } from './input-elements.js';

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
  return phoneStringRest(bytes, start, i, i - start - 1);
}

/**
 * The rest of a JSON string opened at `start`, from `at`, `points` characters already counted (none
 * half a pair). A string with an escape must be written as `JSON.stringify` writes its phone.
 */
function phoneStringRest(bytes: Uint8Array, start: number, at: number, points: number): number {
  let highPending = false;
  let escaped = false;
  let i = at;
  for (;;) {
    if (i >= bytes.length) return -1;
    const c = bytes[i]!;
    if (c === QUOTE) return !escaped || canonicalPhone(bytes, start, i + 1) !== undefined ? i + 1 : -1;
    if (c < 0x20) return -1;
    if (c === BACKSLASH) {
      escaped = true;
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
 * The phone of the JSON string `bytes[start, end)` (its quotes included) when it is exactly what
 * `JSON.stringify` writes for that phone, else undefined. For strings with an escape, the rare case:
 * `JSON.stringify` escapes only `"`, `\`, control characters and lone surrogates, in one way each
 * (`\/`, `\u0041` or a surrogate pair written as escapes are valid JSON, but never its output).
 */
function canonicalPhone(bytes: Uint8Array, start: number, end: number): string | undefined {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString('utf8');
  let phone: unknown;
  try {
    phone = JSON.parse(text);
  } catch {
    return undefined;
  }
  return typeof phone === 'string' && JSON.stringify(phone) === text ? phone : undefined;
}

/**
 * The number of phones of a canonical durable input, or undefined when it is not one: exactly what
 * `JSON.stringify(phones)` writes for an array of at most 500,000 strings of at most 64 characters
 * (no whitespace, an escape only where `JSON.stringify` writes one), in well-formed UTF-8: the form the
 * worker reads (CanonicalInputReader), so an input admitted here can be run. Checked on the bytes,
 * without building 500,000 strings. Stricter than `JSON.parse` (no whitespace, no invalid UTF-8, no
 * escape `JSON.stringify` would not write), never more lenient.
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
const EMPTY = Buffer.alloc(0);

/**
 * A canonical durable input (see `canonicalPhoneCount`: what the scheduler stored once checked) read
 * piece by piece, as its segments arrive: each `push` gives the elements complete so far, in order, and
 * `end` the rest, as `InputElements`: the input's own bytes and where each element starts, not strings.
 * Their phones are exactly those of `JSON.parse` of the whole input (`InputElements.strings`), wherever
 * the segments cut it.
 *
 * Read strictly: the bytes must be `JSON.stringify` of an array of strings (no whitespace, well-formed
 * UTF-8, no control character unescaped), and an element written with an escape must be the one
 * `JSON.stringify` writes for its phone (it is parsed, and written again to compare), since the result
 * takes each element's text as the phone's JSON. Anything else is an error: the input is the one the
 * scheduler checked, sealed since, so only a fault gets here.
 */
export class CanonicalInputReader {
  /** The bytes of elements not yet complete: from an element's opening quote, or `]` at the end. */
  private held: Buffer = EMPTY;
  private started = false;
  /** The last complete element was followed by a comma: another element must come, not `]`. */
  private afterComma = false;
  /** The element `elementEnd` read last holds an escape. */
  private escaped = false;
  /** Where each element of a push starts, reused from push to push. */
  private scratch = new Uint32Array(0);

  push(segment: Buffer): InputElements {
    let bytes = this.held.length > 0 ? Buffer.concat([this.held, segment]) : segment;
    if (!this.started) {
      if (bytes.length === 0) return InputElements.EMPTY;
      if (bytes[0] !== OPEN_BRACKET) throw new Error('the input is not a JSON array');
      this.started = true;
      bytes = bytes.subarray(1);
    }
    // Every element takes at least 3 bytes (`"",`).
    const most = Math.ceil(bytes.length / 3) + 2;
    if (this.scratch.length < most) this.scratch = new Uint32Array(most);
    const starts = this.scratch;
    const decoded = new Map<number, Buffer>();
    let n = 0;
    let pos = 0;
    while (pos < bytes.length) {
      const c = bytes[pos];
      if (c === CLOSE_BRACKET && !this.afterComma) break;
      if (c !== QUOTE) throw new Error('the input is not a canonical JSON array');
      const end = this.elementEnd(bytes, pos);
      // Complete only once the byte after it is here: a comma, or the bracket (the last, for `end`).
      if (end < 0 || end >= bytes.length) break;
      if (bytes[end] === CLOSE_BRACKET) break;
      if (bytes[end] !== COMMA) throw new Error('the input is not a canonical JSON array');
      if (this.escaped) decodeEscaped(bytes, pos, end, decoded);
      starts[n++] = pos;
      pos = end + 1;
      this.afterComma = true;
    }
    this.held = bytes.subarray(pos);
    if (n === 0) return InputElements.EMPTY;
    starts[n] = pos;
    return piece(bytes.subarray(0, pos), starts.slice(0, n + 1), decoded);
  }

  /** The last elements: the rest must be at most one element and the closing bracket, nothing after it. */
  end(): InputElements {
    const bytes = this.held;
    this.held = EMPTY;
    if (!this.started || bytes.length === 0 || bytes[bytes.length - 1] !== CLOSE_BRACKET)
      throw new Error('the input is not a JSON array');
    if (bytes.length === 1) {
      if (this.afterComma) throw new Error('the input is not a canonical JSON array');
      return InputElements.EMPTY;
    }
    const end = bytes[0] === QUOTE ? this.elementEnd(bytes, 0) : -1;
    if (end !== bytes.length - 1) throw new Error('the input is not a canonical JSON array');
    const decoded = new Map<number, Buffer>();
    if (this.escaped) decodeEscaped(bytes, 0, end, decoded);
    return piece(bytes, Uint32Array.of(0, end + 1), decoded);
  }

  /**
   * The index after the closing quote of the element whose opening quote is at `start`, or -1 when its
   * end is not in `bytes` yet; `escaped` says whether it holds an escape. A control character
   * unescaped is an error, as in JSON.
   */
  private elementEnd(bytes: Buffer, start: number): number {
    this.escaped = false;
    let i = start + 1;
    const n = bytes.length;
    while (i < n) {
      const c = bytes[i]!;
      if (c === QUOTE) return i + 1;
      if (c === BACKSLASH) {
        this.escaped = true;
        i += 2;
      } else if (c < 0x20) {
        throw new Error('the input is not a canonical JSON array');
      } else i++;
    }
    return -1;
  }
}

/** An escaped element's phone, which must be written as `JSON.stringify` writes it, into `decoded`. */
function decodeEscaped(bytes: Buffer, start: number, end: number, decoded: Map<number, Buffer>): void {
  const phone = canonicalPhone(bytes, start, end);
  if (phone === undefined) throw new Error('the input is not a canonical JSON array');
  decoded.set(start, Buffer.from(phone, 'utf8'));
}

/** Whole elements of the input, which must be well-formed UTF-8. */
function piece(bytes: Buffer, starts: Uint32Array, decoded: Map<number, Buffer>): InputElements {
  if (!isUtf8(bytes)) throw new Error('the input is not well-formed UTF-8');
  return InputElements.of(bytes, starts, decoded);
}

/** The elements of a whole canonical input (one piece: tests, and phones already in memory). */
export function readCanonicalInput(bytes: Buffer): InputElements {
  const reader = new CanonicalInputReader();
  const elements = reader.push(bytes);
  return InputElements.concat([elements, reader.end()]);
}
