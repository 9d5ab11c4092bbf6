import { registryv1 } from '@dnc/proto';
import { DIGITS, digitCount, hasExtension, hasPlus, MAX_INPUT_STRING_LENGTH, scan } from './fast-scan.js';
import { COMPILED, type CompiledCountry, dfaAccept, trieMatch } from './fast-tables.js';
import { CALLING_CODES, MAX_TRANSFORM_GROWTH } from './generated/calling-codes.js';
import { mx } from './generated/mx.js';
import { type Classification, classifyReference, type NumberingCountry } from './reference.js';
import { hasCommaSecondNumber } from './written-form.js';

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

// checkNumberLength() results.
const IS_POSSIBLE = 0;
const TOO_SHORT = 1;
const TOO_LONG = 2;
const LENGTH_INVALID = 3;

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
const NATIONAL = new Uint8Array(MAX_INPUT_STRING_LENGTH + 8);
const SHORTER = new Uint8Array(MAX_INPUT_STRING_LENGTH + 8);
const FULL = new Uint8Array(MAX_INPUT_STRING_LENGTH + 8);
/** Where the national number of the last decided valid input lives in NATIONAL (for classify). */
let lineOffset = 0;
let lineLength = 0;

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
  // reference.ts classifyReference(): a second number after a comma, whatever the scan makes of it
  // (`55 1234 5678 x,123456` is a labelled extension to the scan).
  if (input.includes(',') && hasCommaSecondNumber(input)) return -INVALID_UNPARSEABLE;
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
  // reference.ts argentineTrunkLine(): the line after a trunk `0` libphonenumber-js kept (rare: decided there).
  if (c.stripMobileNine && national === 11 && NATIONAL[0] === 0) return UNDECIDED;
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
