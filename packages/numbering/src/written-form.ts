// What the rules read of a written form before libphonenumber-js does (rules revision 2). People paste
// numbers with spaces libphonenumber-js does not take as separators: a spreadsheet row's tabs, the
// narrow no-break space U+202F that Intl/ICU formatters write (French and other locales), thin and
// figure spaces. It reads `55\t1234\t5678` as NOT_A_NUMBER but `55 1234 5678` as a valid line: a false
// invalid. Argentina writes an extension `interno 12`, which libphonenumber-js does not know (it knows
// `int 12`, the same word's abbreviation).

/**
 * Tab and the Unicode space separators (general category Zs: U+00A0, U+1680, U+2000-U+200A, U+202F,
 * U+205F), each read as an ASCII space. Not rewritten:
 * - U+3000 (ideographic space): libphonenumber-js already reads it as a space inside the number, but
 *   not around an extension label, and a tilde is both: `55 1234 567~\u30008` is the valid line
 *   5512345678 to it, `55 1234 567~ 8` the short 551234567 with extension 8. Rewriting U+3000 would
 *   change what an input valid before reads as; `ext\u300012` stays unparseable instead.
 * - Line breaks (LF, CR, VT, FF, NEL, U+2028, U+2029): libphonenumber-js already skips them before and
 *   after the number; inside it they split a cell into lines that may hold different values (two
 *   numbers, a number and a note), so the input stays unparseable rather than one number made of both.
 * The fast scan reads these characters with `isSpace` exactly as `cleanWrittenForm` rewrites them.
 */
const SPACES = /[\t\u00a0\u1680\u2000-\u200a\u202f\u205f]/g;

/**
 * The extension word `interno` (any case of its ASCII letters), not inside a longer word: read as
 * `int`, the label libphonenumber-js takes for an extension (createExtensionPattern.js), with the same
 * forms around it (`interno 12`, `Interno: 12`, `interno. 12`, `interno12`, at most 9 digits).
 */
const INTERNO = /(?<![a-z])interno(?![a-z])/gi;

/** `isSpace(c)`: c is one of the characters `cleanWrittenForm` reads as an ASCII space, or that space. */
export function isSpace(c: number): boolean {
  return (
    c === 0x20 ||
    c === 0x09 ||
    c === 0xa0 ||
    c === 0x202f ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x205f ||
    c === 0x1680
  );
}

/**
 * The written form as the rules read it: tabs and Unicode spaces as ASCII spaces, `interno` as `int`.
 * The reference and the technical countries parse this; the fast scan reads the raw input the same
 * way without building it (it costs the hot path nothing). Every written form of a line with spaces
 * gets the key of the form with ASCII spaces. libphonenumber-js reads these characters nowhere but
 * where it reads a space too (tab, U+00A0 as extension separators, U+00A0 inside the number), so an
 * input valid before (as is, rules revision 1) keeps its key: only invalid inputs change (to valid,
 * or to another invalid reason: `55\t1234\t5678 9` is no longer unparseable but too long).
 */
export function cleanWrittenForm(input: string): string {
  return input.replace(SPACES, ' ').replace(INTERNO, 'int');
}

/** An RFC 3966 parameter libphonenumber-js reads (`ext`, `phone-context`) or keeps apart (`isub`). */
const TEL_PARAMETER = /^\s*(?:ext|isub|phone-context)=/i;
const DIGIT = /\p{Nd}/u;

/**
 * Rules revision 3: whether text after a `;` holds digits and is no `ext=`, `isub=` or `phone-context=`
 * parameter, i.e. a second number in the same cell (`5512345678;5587654321`, a list joined by `;`).
 * libphonenumber-js reads what follows `;` as RFC 3966 parameters and ignores those it does not know, so
 * such an input was the first number alone: the second, registered, was answered `safe`. It is
 * `unparseable` instead ("when in doubt, invalid"). Found by a review (2026-12-04).
 */
export function hasForeignParameter(text: string): boolean {
  // Only what follows the number: libphonenumber-js finds a number after a `;` too (`te;:+54 ...`).
  const start = text.search(DIGIT);
  if (start < 0) return false;
  const parts = text.slice(start).split(';');
  for (let i = 1; i < parts.length; i++) {
    const part = parts[i] as string;
    if (DIGIT.test(part) && !TEL_PARAMETER.test(part)) return true;
  }
  return false;
}

/**
 * Rules revision 4: digits after a comma that libphonenumber-js would read as an extension without a
 * label (`,` or `,,` then up to 9 digits: the auto-dial forms of createExtensionPattern.js) and that are
 * as long as a subscriber number, from `COMMA_SECOND_NUMBER` digits: a second number in the same cell
 * (`3001234567,46123456`, `011 4123 4567,41234568`), which was the first number alone, the second,
 * registered, answered `safe` (found by a review, 2026-12-04). It is `unparseable` instead ("when in
 * doubt, invalid"); a short dialled extension (`55 1234 5678,,123`) is read as before. Spaces are any
 * `\s`, so the raw input and `cleanWrittenForm`'s reading of it give the same answer (the fast path asks
 * it of the raw input).
 */
export function hasCommaSecondNumber(text: string): boolean {
  const start = text.search(DIGIT);
  return start >= 0 && COMMA_SECOND_NUMBER.test(text.slice(start));
}

/**
 * A comma, then what createExtensionPattern.js lets stand between it and the digits (spaces, commas,
 * dashes, one `:` or `.` or `．`: `,-4612345`, `,:46123456` are read as extensions too), then six digits or
 * more (Argentina's shortest subscriber numbers).
 */
const COMMA_SECOND_NUMBER = /,[\s,-]*[:.\uff0e]?[\s,-]*\p{Nd}{6}/u;
