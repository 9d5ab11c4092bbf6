import { isAscii } from 'node:buffer';
import { LIMITS } from '@dnc/api-contract';
import { type ElementRun, type PhoneList, PhoneListWriter, type PhoneSequence } from '@dnc/kit';

const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const CONTROL_END = 0x20;

const isWhitespace = (c: number | undefined) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/**
 * The phones of a scrub body, read in place from its bytes: the offsets of their strings, and each
 * phone made as a string only when it is asked for (`at`). The body's JSON parse made 500,000 strings
 * (v2) that lived as long as the request: V8 allocates a string over ten characters in the young
 * generation, and every scavenge during the request copied all of them (two of ~16 ms per parse,
 * whatever the semi-space size). Here each string lives only while the one validation that reads it
 * runs. A v1 request's phones never become strings: its fingerprint hashes `canonical`, its Check
 * carries `phoneList()`, and its result is rendered from `runs` (kit's `renderScrubResult`).
 */
export class BodyPhones implements PhoneSequence {
  constructor(
    private readonly bytes: Buffer,
    /** Where each phone's opening quote is; one more entry: one past the array's closing bracket. */
    private readonly starts: Int32Array,
    readonly length: number,
    /** The array's own bytes: `JSON.stringify(phones)` exactly (see `readDurableBody`). */
    readonly canonical: Buffer,
  ) {}

  at(index: number): string | undefined {
    if (!Number.isInteger(index) || index < 0 || index >= this.length) return undefined;
    // From after the opening quote to before the closing one (followed by `,` or `]`, then the next).
    return this.bytes.toString('latin1', this.starts[index]! + 1, this.starts[index + 1]! - 2);
  }

  /** Every phone as a string (a few of them: a Check shared with other small requests). */
  strings(): string[] {
    return Array.from({ length: this.length }, (_, i) => this.at(i) as string);
  }

  /** The elements as kit's `ElementRun`: each one's JSON text is the phone's `JSON.stringify`. */
  get runs(): readonly ElementRun[] {
    return [{ bytes: this.bytes, starts: this.starts, first: 0, end: this.length }];
  }

  /** The phones as a Check's `phone_list` (a length and the bytes of each), copied from the body. */
  phoneList(): PhoneList {
    const { bytes, starts, length } = this;
    let size = 0;
    for (let i = 0; i < length; i++) size += PhoneListWriter.recordSize(starts[i + 1]! - 3 - starts[i]!);
    const writer = new PhoneListWriter(size);
    for (let i = 0; i < length; i++) writer.add(bytes, starts[i]! + 1, starts[i + 1]! - 2);
    return writer.finish();
  }
}

/**
 * A scrub body, v1 or v2 (`{"country": ..., "phones": [...]}`), read on its bytes, when they are in the
 * form nearly every client sends: ASCII, no backslash anywhere, the two members once each in either order with any
 * whitespace between the tokens, and the phones array written compactly (`["a","b"]`, nothing between
 * its tokens). Undefined for anything else — another key, a duplicate, an escape, a non-ASCII byte, a
 * control character, whitespace inside the array, no phones or more than `maxInputs` (the route's
 * `maxItems`), a phone over the limit — which the JSON parse and the route's schema then read as
 * before, with their own errors.
 *
 * What this returns is what `JSON.parse` and the schema's phone rules give for the same bytes:
 * - ASCII without a backslash holds no escape, so every string is its bytes between two quotes, and a
 *   string ends at the first quote after its opening one. JSON forbids raw control characters in a
 *   string: any byte under 0x20 in the array declines, and in the country it declines too.
 * - The phones are strings of at most `LIMITS.maxPhoneLength` bytes, one byte a code point here, and
 *   at most `maxInputs` of them: what the schema's `maxLength` and `maxItems` allow. The
 *   country is returned as it was written; the schema judges it (its `enum`).
 * - Each phone is `"` + phone + `"` in `JSON.stringify` (no character of it is escaped) and the array
 *   has no whitespace, so its bytes are the serialization the durable input and the fingerprint take.
 */
export function readScrubBody(
  bytes: Buffer,
  maxInputs: number,
): { country: string; phones: BodyPhones } | undefined {
  if (!isAscii(bytes) || bytes.indexOf(BACKSLASH) !== -1) return undefined;
  const end = bytes.length;
  let at = skipWhitespace(bytes, 0);
  if (bytes[at] !== OPEN_BRACE) return undefined;
  let country: string | undefined;
  let phones: BodyPhones | undefined;
  for (let member = 0; member < 2; member++) {
    at = skipWhitespace(bytes, at + 1);
    const key = stringAt(bytes, at);
    if (key === undefined) return undefined;
    at = skipWhitespace(bytes, key.next);
    if (bytes[at] !== COLON) return undefined;
    at = skipWhitespace(bytes, at + 1);
    const name = bytes.toString('latin1', key.from, key.to);
    if (name === 'country' && country === undefined) {
      const value = stringAt(bytes, at);
      if (value === undefined) return undefined;
      country = bytes.toString('latin1', value.from, value.to);
      at = value.next;
    } else if (name === 'phones' && phones === undefined) {
      phones = phonesAt(bytes, at, maxInputs);
      if (phones === undefined) return undefined;
      at = at + phones.canonical.length;
    } else return undefined;
    at = skipWhitespace(bytes, at);
    if (bytes[at] !== (member === 0 ? COMMA : CLOSE_BRACE)) return undefined;
  }
  if (skipWhitespace(bytes, at + 1) !== end || country === undefined || phones === undefined)
    return undefined;
  return { country, phones };
}

/** A string token at `at` with no control character: its content's bounds and the index after it. */
function stringAt(bytes: Buffer, at: number): { from: number; to: number; next: number } | undefined {
  if (bytes[at] !== QUOTE) return undefined;
  const close = bytes.indexOf(QUOTE, at + 1);
  if (close === -1) return undefined;
  for (let i = at + 1; i < close; i++) if (bytes[i]! < CONTROL_END) return undefined;
  return { from: at + 1, to: close, next: close + 1 };
}

/** The compact array of phone strings starting at `at` (its `[`), within the schema's limits. */
function phonesAt(bytes: Buffer, at: number, maxInputs: number): BodyPhones | undefined {
  if (bytes[at] !== OPEN_BRACKET || bytes[at + 1] !== QUOTE) return undefined;
  // Every phone takes at least three bytes (`"",`): no more of them than that, nor than the limit allows.
  const most = Math.min(maxInputs, Math.floor((bytes.length - at) / 3));
  const starts = new Int32Array(most + 1);
  let count = 0;
  let i = at + 1;
  for (;;) {
    if (count === most || bytes[i] !== QUOTE) return undefined;
    const close = bytes.indexOf(QUOTE, i + 1);
    if (close === -1 || close - i - 1 > LIMITS.maxPhoneLength) return undefined;
    for (let k = i + 1; k < close; k++) if (bytes[k]! < CONTROL_END) return undefined;
    starts[count++] = i;
    const after = bytes[close + 1];
    if (after === CLOSE_BRACKET) {
      starts[count] = close + 2;
      return new BodyPhones(bytes, starts, count, bytes.subarray(at, close + 2));
    }
    if (after !== COMMA) return undefined;
    i = close + 2;
  }
}

function skipWhitespace(bytes: Buffer, from: number): number {
  let at = from;
  while (at < bytes.length && isWhitespace(bytes[at])) at++;
  return at;
}
