// The fast path's first step: one pass over an input's char codes that extracts its digits (parse.js
// extractFormattedPhoneNumber, isViablePhoneNumber, extractExtension) or says the input is outside the
// grammar the fast path decides. It reads the raw input as the reference reads `cleanWrittenForm(input)`
// (written-form.ts): every `isSpace` character as an ASCII space, the word `interno` as `int`.

import { isSpace } from './written-form.js';

export const MAX_INPUT_STRING_LENGTH = 250; // parse.js

// Scratch state: the hot path allocates nothing. JavaScript runs one call at a time and nothing here
// yields, so module-level state is safe to share between countries; `scan` alone writes it.
/** The digits of the last scanned input (DIGITS[0 .. digitCount)). */
export const DIGITS = new Uint8Array(MAX_INPUT_STRING_LENGTH);
export let digitCount = 0;
export let hasPlus = false;
export let hasExtension = false;

/** parseDigits.js DIGITS: ASCII, full-width, Arabic-Indic and Eastern Arabic-Indic digits. */
export function digitValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 0xff10 && c <= 0xff19) return c - 0xff10;
  if (c >= 0x0660 && c <= 0x0669) return c - 0x0660;
  if (c >= 0x06f0 && c <= 0x06f9) return c - 0x06f0;
  return -1;
}

/**
 * constants.js VALID_PUNCTUATION without the tildes (they double as extension labels), with the
 * characters cleanWrittenForm reads as a space (tab, Unicode spaces: `isSpace`, in the default branch,
 * which keeps the switch as fast as before for the common separators).
 */
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
      return (c >= 0x2010 && c <= 0x2015) || isSpace(c); // dashes, Unicode spaces
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
 * where every `isSpace` character is a space and `interno` not followed by a letter is `int`
 * (cleanWrittenForm; no letter can precede the label here). Returns the index after the extension
 * digits, NO_EXTENSION, or UNSURE (too many digits: the reference applies per-label limits).
 */
function extensionEnd(input: string, i: number): number {
  const length = input.length;
  let j = i;
  for (; j < length; j++) {
    const c = input.charCodeAt(j);
    if (c !== 0x2c && !isSpace(c)) break;
  }
  if (isAt(input, j, 'ext')) {
    j += 3;
    if (lowerAt(input, j) === 0x6e) j++; // extn
  } else if (isAt(input, j, 'int')) {
    j += 3;
    if (isAt(input, j, 'erno') && lowerAt(input, j + 4) === 0) j += 4; // interno
  } else if (lowerAt(input, j) === 0x78)
    j++; // x
  else return NO_EXTENSION;
  let c = input.charCodeAt(j);
  if (c === 0x3a || c === 0x2e) c = input.charCodeAt(++j); // : .
  while (c === 0x2c || c === 0x2d || isSpace(c)) c = input.charCodeAt(++j);
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
export function scan(input: string): boolean {
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
