import { registryv1 } from '@dnc/proto';
import { ar } from './generated/ar.js';
import { CALLING_CODES, MAX_TRANSFORM_GROWTH } from './generated/calling-codes.js';
import { co } from './generated/co.js';
import { mx } from './generated/mx.js';
import { type Classification, classifyReference, type NumberingCountry } from './reference.js';
import type { CountryTables } from './tables.js';

// The fast path re-implements, over digit buffers, the steps libphonenumber-js `parse()` takes for
// the inputs people really send to this country: number extraction, `+`/IDD + own calling code,
// the calling code without `+`, the national prefix for parsing (with its transform rule), and the
// validity check against the generated DFA. It decides only inputs inside that grammar and returns
// UNDECIDED for everything else (letters or `#`/`;` inside the number, rarer extension forms, two
// digits, ...); the caller then asks the reference. Every step cites the
// libphonenumber-js source it mirrors, so a change there shows up in the differential test.
//
// Deliberate differences from the reference: none. Inputs outside the grammar are not decided here.

const INVALID_UNPARSEABLE = registryv1.Outcome.INVALID_UNPARSEABLE;
const INVALID_LENGTH = registryv1.Outcome.INVALID_LENGTH;
const INVALID_NUMBER = registryv1.Outcome.INVALID_NUMBER;
const INVALID_WRONG_COUNTRY = registryv1.Outcome.INVALID_WRONG_COUNTRY;

/** `decideFast` could not decide the input with certainty; ask the reference. */
export const UNDECIDED = 0;

const MIN_LENGTH_FOR_NSN = 2; // libphonenumber-js constants.js
const MAX_LENGTH_FOR_NSN = 17;
const MAX_INPUT_STRING_LENGTH = 250; // parse.js

// checkNumberLength() results.
const IS_POSSIBLE = 0;
const TOO_SHORT = 1;
const TOO_LONG = 2;
const LENGTH_INVALID = 3;

interface Trie {
  /** child[node * 10 + digit]: next node or -1. */
  child: Int32Array;
  /** entry[node]: lowest-priority-index entry ending at node, or -1. */
  entry: Int32Array;
}

interface CompiledCountry {
  country: NumberingCountry;
  callingCode: string;
  cc: Uint8Array;
  minLength: number;
  maxLength: number;
  lengthMask: number;
  typeBitsByLength: Uint16Array;
  idd: Trie;
  iddLength: Int32Array;
  national: Trie;
  nationalLength: Int32Array;
  /** Group digits of entry e: groupDigits[groupStart[e] .. groupStart[e] + groupLength[e]]; length 0 = none. */
  groupStart: Int32Array;
  groupLength: Int32Array;
  groupDigits: Uint8Array;
  transformBefore: Uint8Array | null;
  transformAfter: Uint8Array;
  trans: Int32Array;
  accept: Uint16Array;
  stripMobileNine: boolean;
  mexicanObsolete: boolean;
}

function digitsOf(s: string): Uint8Array {
  return Uint8Array.from(s, (ch) => ch.charCodeAt(0) - 48);
}

function buildTrie(words: readonly string[]): Trie {
  const child: number[] = new Array(10).fill(-1);
  const entry: number[] = [-1];
  words.forEach((word, index) => {
    let node = 0;
    for (const ch of word) {
      const slot = node * 10 + (ch.charCodeAt(0) - 48);
      let next = child[slot]!;
      if (next < 0) {
        next = entry.length;
        child[slot] = next;
        entry.push(-1);
        for (let d = 0; d < 10; d++) child.push(-1);
      }
      node = next;
    }
    // Keep the first (highest-priority) entry for a repeated string.
    if (entry[node]! < 0) entry[node] = index;
  });
  return { child: Int32Array.from(child), entry: Int32Array.from(entry) };
}

function decodeBase64<T>(text: string, make: (buffer: ArrayBuffer) => T): T {
  const bytes = Buffer.from(text, 'base64');
  const copy = new ArrayBuffer(bytes.length);
  new Uint8Array(copy).set(bytes);
  return make(copy);
}

function compile(country: NumberingCountry, t: CountryTables): CompiledCountry {
  const idd = t.iddPrefixes.split(' ').filter(Boolean);
  // '' means no national prefix for parsing; inside a list, '' is the entry matching nothing.
  const entries = t.nationalPrefixes === '' ? [] : t.nationalPrefixes.split(' ');
  const prefixes = entries.map((e) => e.split('/')[0] ?? '');
  const groups = entries.map((e) => e.split('/')[1] ?? '');
  const groupStart = new Int32Array(groups.length);
  const groupLength = new Int32Array(groups.length);
  const allGroups: number[] = [];
  groups.forEach((g, i) => {
    groupStart[i] = allGroups.length;
    groupLength[i] = g.length;
    for (const ch of g) allGroups.push(ch.charCodeAt(0) - 48);
  });
  let lengthMask = 0;
  for (const len of t.possibleLengths) lengthMask |= 1 << len;
  const trans = decodeBase64(t.dfaTransitions, (b) => new Int32Array(b));
  const accept = decodeBase64(t.dfaAccept, (b) => new Uint16Array(b));
  if (trans.length !== t.dfaStates * 10 || accept.length !== t.dfaStates) {
    throw new Error(`numbering tables for ${country} are corrupt`);
  }
  return {
    country,
    callingCode: t.callingCode,
    cc: digitsOf(t.callingCode),
    minLength: t.possibleLengths[0]!,
    maxLength: t.possibleLengths[t.possibleLengths.length - 1]!,
    lengthMask,
    typeBitsByLength: Uint16Array.from(t.typeBitsByLength),
    idd: buildTrie(idd),
    iddLength: Int32Array.from(idd, (s) => s.length),
    national: buildTrie(prefixes),
    nationalLength: Int32Array.from(prefixes, (s) => s.length),
    groupStart,
    groupLength,
    groupDigits: Uint8Array.from(allGroups),
    transformBefore: t.transform ? digitsOf(t.transform.before) : null,
    transformAfter: t.transform ? digitsOf(t.transform.after) : new Uint8Array(0),
    trans,
    accept,
    stripMobileNine: country === 'ar',
    mexicanObsolete: country === 'mx',
  };
}

const COMPILED: Record<NumberingCountry, CompiledCountry> = {
  mx: compile('mx', mx),
  ar: compile('ar', ar),
  co: compile('co', co),
};

/** KNOWN_CALLING_CODE[length * 1000 + value]: 1 for a calling code of `length` digits. */
const KNOWN_CALLING_CODE = new Uint8Array(4000);
for (const code of CALLING_CODES.split(' ')) KNOWN_CALLING_CODE[code.length * 1000 + Number(code)] = 1;

/**
 * Above this many digits after a foreign calling code, parse() might throw TOO_LONG: the national
 * number is at most the rest plus what a transform rule adds.
 */
const MAX_FOREIGN_REST = MAX_LENGTH_FOR_NSN - MAX_TRANSFORM_GROWTH;

/** The libphonenumber-js release the generated tables come from. */
export const TABLES_LIBPHONENUMBER_VERSION = mx.libphonenumberVersion;

// Scratch buffers: the hot path allocates nothing. JavaScript runs one call at a time and nothing
// here yields, so module-level buffers are safe to share between countries.
const DIGITS = new Uint8Array(MAX_INPUT_STRING_LENGTH);
const NATIONAL = new Uint8Array(MAX_INPUT_STRING_LENGTH + 8);
const SHORTER = new Uint8Array(MAX_INPUT_STRING_LENGTH + 8);
const FULL = new Uint8Array(MAX_INPUT_STRING_LENGTH + 8);
let digitCount = 0;
let hasPlus = false;
let hasExtension = false;
/** Where the national number of the last decided valid input lives in NATIONAL (for classify). */
let lineOffset = 0;
let lineLength = 0;

/** parseDigits.js DIGITS: ASCII, full-width, Arabic-Indic and Eastern Arabic-Indic digits. */
function digitValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 0xff10 && c <= 0xff19) return c - 0xff10;
  if (c >= 0x0660 && c <= 0x0669) return c - 0x0660;
  if (c >= 0x06f0 && c <= 0x06f9) return c - 0x06f0;
  return -1;
}

/** constants.js VALID_PUNCTUATION without the tildes (they double as extension labels). */
function isPunctuation(c: number): boolean {
  switch (c) {
    case 0x20: // space
    case 0xa0: // no-break space
    case 0xad: // soft hyphen
    case 0x200b: // zero width space
    case 0x2060: // word joiner
    case 0x3000: // ideographic space
    case 0x2d: // -
    case 0x2212: // minus sign
    case 0x30fc:
    case 0xff0d:
    case 0x2f: // /
    case 0xff0f:
    case 0x2e: // .
    case 0xff0e:
    case 0x28: // (
    case 0x29: // )
    case 0xff08:
    case 0xff09:
    case 0x5b: // [
    case 0x5d: // ]
    case 0xff3b:
    case 0xff3d:
      return true;
    default:
      return c >= 0x2010 && c <= 0x2015; // dashes
  }
}

/** ASCII letter at input[i], lowercased, or 0. */
function lowerAt(input: string, i: number): number {
  const c = input.charCodeAt(i);
  if ((c >= 65 && c <= 90) || (c >= 97 && c <= 122)) return c | 0x20;
  return 0;
}

function isAt(input: string, i: number, word: string): boolean {
  for (let k = 0; k < word.length; k++) if (lowerAt(input, i + k) !== word.charCodeAt(k)) return false;
  return true;
}

const NO_EXTENSION = -1;
const UNSURE = -2;

/**
 * An extension starting at input[i] (the first character after the number that is not punctuation),
 * in the forms of createExtensionPattern.js that cannot start inside the number:
 *   [ \u00A0\t,]* (ext | extn | int | x) [:.]? [ \u00A0\t,-]* digit{1,6}      (case-insensitive)
 * Returns the index after the extension digits, NO_EXTENSION, or UNSURE (too many digits: the
 * reference applies per-label limits).
 */
function extensionEnd(input: string, i: number): number {
  const length = input.length;
  let j = i;
  for (; j < length; j++) {
    const c = input.charCodeAt(j);
    if (c !== 0x20 && c !== 0xa0 && c !== 0x09 && c !== 0x2c) break;
  }
  if (isAt(input, j, 'ext')) {
    j += 3;
    if (lowerAt(input, j) === 0x6e) j++; // extn
  } else if (isAt(input, j, 'int')) j += 3;
  else if (lowerAt(input, j) === 0x78)
    j++; // x
  else return NO_EXTENSION;
  let c = input.charCodeAt(j);
  if (c === 0x3a || c === 0x2e) c = input.charCodeAt(++j); // : .
  while (c === 0x20 || c === 0xa0 || c === 0x09 || c === 0x2c || c === 0x2d) c = input.charCodeAt(++j);
  let k = 0;
  while (j < length && digitValue(input.charCodeAt(j)) >= 0) {
    j++;
    k++;
  }
  if (k === 0) return NO_EXTENSION;
  return k > 6 ? UNSURE : j;
}

/**
 * One pass over the char codes: fills DIGITS/digitCount/hasPlus/hasExtension and returns true when
 * the input is inside the grammar where the reference's extraction is known (parse.js
 * extractFormattedPhoneNumber, isViablePhoneNumber, extractExtension; RFC 3966 handling only
 * triggers on `;`):
 *   anything but `;`, `#`, plus signs   before the first digit or `+`  (skipped: `tel:`, labels)
 *   `+`?                                ASCII plus as the first significant character
 *   digits and punctuation              the number
 *   an extension (extensionEnd)?        not part of the line
 *   anything but digits, `#`, `;`       after that (parse() strips it)
 */
function scan(input: string): boolean {
  const length = input.length;
  if (length > MAX_INPUT_STRING_LENGTH) return false;
  let n = 0;
  let started = false;
  let tail = false;
  hasPlus = false;
  hasExtension = false;
  for (let i = 0; i < length; i++) {
    const c = input.charCodeAt(i);
    const d = digitValue(c);
    if (d >= 0) {
      if (tail) return false;
      DIGITS[n++] = d;
      started = true;
    } else if (c === 0x3b || c === 0x23) {
      return false; // `;` (RFC 3966 parameters) or `#` (extension forms with other rules)
    } else if (!started) {
      if (c === 0x2b) {
        hasPlus = true;
        started = true;
      } else if (c === 0xff0b) {
        return false; // full-width plus starts the number but is not read as a plus
      }
    } else if (tail || isPunctuation(c)) {
      // separator inside the number, or trailing text
    } else if (n === 0) {
      return false; // `+` followed by something that is not a number
    } else {
      const end = extensionEnd(input, i);
      if (end === UNSURE) return false;
      if (end !== NO_EXTENSION) {
        hasExtension = true;
        i = end - 1;
      }
      tail = true;
    }
  }
  digitCount = n;
  return true;
}

function trieMatch(t: Trie, src: Uint8Array, offset: number, length: number): number {
  let best = t.entry[0]!;
  let node = 0;
  for (let i = 0; i < length; i++) {
    node = t.child[node * 10 + src[offset + i]!]!;
    if (node < 0) break;
    const e = t.entry[node]!;
    if (e >= 0 && (best < 0 || e < best)) best = e;
  }
  return best;
}

function dfaAccept(c: CompiledCountry, src: Uint8Array, offset: number, length: number): number {
  let state = 0;
  const trans = c.trans;
  for (let i = 0; i < length; i++) {
    state = trans[state * 10 + src[offset + i]!]!;
    if (state < 0) return 0;
  }
  return c.accept[state]!;
}

/** matchesEntirely(nationalNumber, metadata.nationalNumberPattern()). */
function matchesGeneral(c: CompiledCountry, src: Uint8Array, offset: number, length: number): boolean {
  return (dfaAccept(c, src, offset, length) & 1) !== 0;
}

/** isValid.js -> getNumberType.js: national pattern, then any type pattern with its lengths. */
function isValidNational(c: CompiledCountry, src: Uint8Array, offset: number, length: number): boolean {
  if (length > MAX_LENGTH_FOR_NSN) return false;
  const mask = dfaAccept(c, src, offset, length);
  return (mask & 1) !== 0 && (mask & c.typeBitsByLength[length]!) !== 0;
}

/** checkNumberLength.js with the general possible lengths. */
function checkLength(c: CompiledCountry, length: number): number {
  if (length === c.minLength) return IS_POSSIBLE;
  if (length < c.minLength) return TOO_SHORT;
  if (length > c.maxLength) return TOO_LONG;
  return length < 31 && (c.lengthMask & (1 << length)) !== 0 ? IS_POSSIBLE : LENGTH_INVALID;
}

function copyDigits(src: Uint8Array, offset: number, length: number, dst: Uint8Array): number {
  for (let i = 0; i < length; i++) dst[i] = src[offset + i]!;
  return length;
}

function sameDigits(a: Uint8Array, ao: number, b: Uint8Array, bo: number, length: number): boolean {
  for (let i = 0; i < length; i++) if (a[ao + i] !== b[bo + i]) return false;
  return true;
}

/**
 * extractNationalNumber.js (with extractNationalNumberFromPossiblyIncompleteNumber.js): writes the
 * national number for src[offset, offset+length) into dst from 0 and returns its length.
 */
function extractNational(
  c: CompiledCountry,
  src: Uint8Array,
  offset: number,
  length: number,
  dst: Uint8Array,
): number {
  const e = c.nationalLength.length === 0 ? -1 : trieMatch(c.national, src, offset, length);
  if (e < 0) return copyDigits(src, offset, length, dst);
  const matched = c.nationalLength[e]!;
  let n = 0;
  const groupLength = c.groupLength[e]!;
  if (c.transformBefore !== null && groupLength > 0) {
    // number.replace(prefixPattern, transformRule): before + $1 + after, then the rest.
    const before = c.transformBefore;
    for (let i = 0; i < before.length; i++) dst[n++] = before[i]!;
    const g = c.groupStart[e]!;
    for (let i = 0; i < groupLength; i++) dst[n++] = c.groupDigits[g + i]!;
    const after = c.transformAfter;
    for (let i = 0; i < after.length; i++) dst[n++] = after[i]!;
  }
  for (let i = offset + matched; i < offset + length; i++) dst[n++] = src[i]!;
  if (n === length && sameDigits(dst, 0, src, offset, length)) return n;
  // shouldHaveExtractedNationalPrefix(), then isPossibleIncompleteNationalNumber().
  if (matchesGeneral(c, src, offset, length) && !matchesGeneral(c, dst, 0, n)) {
    return copyDigits(src, offset, length, dst);
  }
  const possible = checkLength(c, n);
  if (possible === TOO_SHORT || possible === LENGTH_INVALID) return copyDigits(src, offset, length, dst);
  return n;
}

function startsWithCallingCode(c: CompiledCountry, offset: number): boolean {
  const cc = c.cc;
  if (digitCount - offset < cc.length) return false;
  for (let i = 0; i < cc.length; i++) if (DIGITS[offset + i] !== cc[i]) return false;
  return true;
}

/**
 * extractCountryCallingCode.js for an international number DIGITS[offset..] that does not carry the
 * own calling code: the first known calling code of 1 to 3 digits wins; none (also `+0...`) is
 * INVALID_COUNTRY (unparseable); another country's code is `wrong_country` once parse() is sure not
 * to throw TOO_SHORT/TOO_LONG first: with at least 2 digits after the code, the national number is
 * either those digits or a stripped form no shorter than that plan's shortest possible length (>= 2,
 * checked by the generator), and with at most MAX_FOREIGN_REST it cannot exceed 17 digits.
 */
function foreignCallingCode(offset: number): number {
  let value = 0;
  for (let length = 1; length <= 3 && offset + length <= digitCount; length++) {
    value = value * 10 + DIGITS[offset + length - 1]!;
    if (KNOWN_CALLING_CODE[length * 1000 + value] === 1) {
      const rest = digitCount - offset - length;
      return rest >= MIN_LENGTH_FOR_NSN && rest <= MAX_FOREIGN_REST ? -INVALID_WRONG_COUNTRY : UNDECIDED;
    }
  }
  return -INVALID_UNPARSEABLE;
}

function keyOf(c: CompiledCountry, offset: number, length: number): number {
  let start = offset;
  if (c.stripMobileNine && length === 11 && NATIONAL[offset] === 9) start++;
  let key = 0;
  for (let i = start; i < offset + length; i++) key = key * 10 + NATIONAL[i]!;
  lineOffset = offset;
  lineLength = length;
  return key;
}

/** reference.ts mexicanObsoleteLine(): offset of the 10-digit line inside NATIONAL, or -1. */
function mexicanObsoleteOffset(length: number): number {
  const n = NATIONAL;
  if (length === 11 && n[0] === 1) return 1;
  if (length === 12 && n[0] === 0 && n[1] === 1) return 2;
  if (
    length === 13 &&
    ((n[0] === 0 && n[1] === 4 && (n[2] === 4 || n[2] === 5)) || (n[0] === 5 && n[1] === 2 && n[2] === 1))
  ) {
    return 3;
  }
  return -1;
}

/**
 * The fast decision: the registry key (> 0) of a valid number, `-outcome` of an invalid one, or
 * UNDECIDED (0) when the input is outside the fast grammar. Allocates nothing.
 */
export function decideFast(country: NumberingCountry, input: string): number {
  const c = COMPILED[country];
  if (!scan(input)) return UNDECIDED;
  const n = digitCount;
  // isViablePhoneNumber(): no digit is NOT_A_NUMBER; one digit is TOO_SHORT; two digits and a number
  // with an extension but fewer than three digits take other paths.
  if (n === 0) return -INVALID_UNPARSEABLE;
  if (n < 3) return n === 1 && !hasExtension ? -INVALID_LENGTH : UNDECIDED;
  let national: number;
  if (hasPlus) {
    if (!startsWithCallingCode(c, 0)) return foreignCallingCode(0);
    national = extractNational(c, DIGITS, c.cc.length, n - c.cc.length, NATIONAL);
  } else {
    // stripIddPrefix.js: an IDD prefix counts when something not starting with 0 follows it.
    const e = trieMatch(c.idd, DIGITS, 0, n);
    const iddLength = e < 0 ? 0 : c.iddLength[e]!;
    if (iddLength > 0 && iddLength < n && DIGITS[iddLength] !== 0) {
      if (!startsWithCallingCode(c, iddLength)) return foreignCallingCode(iddLength);
      const at = iddLength + c.cc.length;
      national = extractNational(c, DIGITS, at, n - at, NATIONAL);
    } else if (startsWithCallingCode(c, 0)) {
      // extractCountryCallingCodeFromInternationalNumberWithoutPlusSign.js
      const ccLength = c.cc.length;
      const shorter = extractNational(c, DIGITS, ccLength, n - ccLength, SHORTER);
      const full = extractNational(c, DIGITS, 0, n, FULL);
      const stripCallingCode =
        (!matchesGeneral(c, FULL, 0, full) && matchesGeneral(c, SHORTER, 0, shorter)) ||
        checkLength(c, full) === TOO_LONG;
      national = stripCallingCode
        ? copyDigits(SHORTER, 0, shorter, NATIONAL)
        : copyDigits(FULL, 0, full, NATIONAL);
    } else {
      national = extractNational(c, DIGITS, 0, n, NATIONAL);
    }
  }
  // parse.js: TOO_SHORT / TOO_LONG.
  if (national < MIN_LENGTH_FOR_NSN || national > MAX_LENGTH_FOR_NSN) return -INVALID_LENGTH;
  if (isValidNational(c, NATIONAL, 0, national)) return keyOf(c, 0, national);
  if (c.mexicanObsolete) {
    const at = mexicanObsoleteOffset(national);
    if (at >= 0 && isValidNational(c, NATIONAL, at, national - at)) return keyOf(c, at, national - at);
  }
  return checkLength(c, national) === IS_POSSIBLE ? -INVALID_NUMBER : -INVALID_LENGTH;
}

/**
 * Diagnostics for tests: the DFA accept bits of an ASCII digit string (bit 0 national number pattern,
 * bit 1 + i libphonenumber-js type i), so the generated tables can be checked against the patterns.
 */
export function patternBits(country: NumberingCountry, digits: string): number {
  const c = COMPILED[country];
  const buffer = new Uint8Array(digits.length);
  for (let i = 0; i < digits.length; i++) buffer[i] = digits.charCodeAt(i) - 48;
  return dfaAccept(c, buffer, 0, digits.length);
}

/** The fast classifier with the reference as fallback: exact on every input. */
export function normalizeFast(country: NumberingCountry, input: string): number {
  const decided = decideFast(country, input);
  if (decided !== UNDECIDED) return decided;
  const c = classifyReference(country, input);
  return c.outcome === registryv1.Outcome.UNSPECIFIED ? c.key : -c.outcome;
}

/** Diagnostic form of `normalizeFast` (allocates the result). */
export function classifyFast(country: NumberingCountry, input: string): Classification {
  const decided = decideFast(country, input);
  if (decided === UNDECIDED) return classifyReference(country, input);
  if (decided < 0) return { outcome: -decided as registryv1.Outcome, key: 0, e164: null };
  const c = COMPILED[country];
  let e164 = `+${c.callingCode}`;
  for (let i = lineOffset; i < lineOffset + lineLength; i++) e164 += NATIONAL[i];
  return { outcome: registryv1.Outcome.UNSPECIFIED, key: decided, e164 };
}
