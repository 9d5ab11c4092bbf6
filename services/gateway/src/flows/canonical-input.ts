import { isAscii } from 'node:buffer';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COLON = 0x3a;
const WHITESPACE = [0x20, 0x09, 0x0a, 0x0d] as const;
const PHONES_KEY = Buffer.from('"phones"');

/**
 * The phones of a v2 body as the durable input stores them — `JSON.stringify(phones)` in UTF-8 — taken
 * from the body's own bytes when they already are exactly that, so 500,000 numbers are not serialized
 * again (30-50 ms and an 8 MB string per request). Undefined whenever that cannot be shown cheaply; the
 * caller then serializes.
 *
 * `body` is the request body `phones` was parsed from, already validated against the route's schema (an
 * object whose only keys are `country`, a code, and `phones`, an array of strings). Why the slice is
 * then exactly the serialization, with nothing but native scans and one pass over the lengths:
 * - The body is ASCII with no backslash, so it holds no escape: every string in it is its characters
 *   between two quotes, and each phone is ASCII without `"`, `\` or a control character (JSON forbids
 *   raw ones), which `JSON.stringify` writes as `"` + phone + `"`: the serialization is L bytes, L
 *   computed from the lengths below.
 * - A quoted `"phones"` followed by `:` is a key (an array element is followed by `,` or `]`), and no
 *   string holds a quote, so the last occurrence is the key `JSON.parse` kept (duplicates: the last
 *   wins). Its value starts at the `[` after the colon.
 * - The value's tokens with the whitespace between them removed are the serialization. If its first L
 *   bytes hold no whitespace byte at all, they are the first L bytes of that token stream: all of it.
 */
export function canonicalFromBody(body: Buffer | undefined, phones: readonly string[]): Buffer | undefined {
  if (!body || !isAscii(body) || body.indexOf(BACKSLASH) !== -1) return undefined;
  const key = body.lastIndexOf(PHONES_KEY);
  if (key === -1) return undefined;
  let at = skipWhitespace(body, key + PHONES_KEY.length);
  if (body[at] !== COLON) return undefined;
  at = skipWhitespace(body, at + 1);
  if (body[at] !== OPEN_BRACKET) return undefined;

  let length = 2 + Math.max(0, phones.length - 1);
  // An indexed loop: run once per request, it stays cold, where for-of costs ~6x (28 against 4.6 ms).
  for (let i = 0; i < phones.length; i++) length += (phones[i] as string).length + 2;
  if (at + length > body.length) return undefined;
  const slice = body.subarray(at, at + length);
  for (const space of WHITESPACE) if (slice.indexOf(space) !== -1) return undefined;
  // Implied by the above; checked anyway, cheaply.
  if (slice[length - 1] !== CLOSE_BRACKET || (phones.length > 0 && slice[1] !== QUOTE)) return undefined;
  return slice;
}

function skipWhitespace(bytes: Buffer, from: number): number {
  let at = from;
  while (at < bytes.length && (WHITESPACE as readonly number[]).includes(bytes[at] as number)) at++;
  return at;
}
