import { registryv1 } from '@dnc/proto';
import { ParseError, parsePhoneNumberWithError } from 'libphonenumber-js/max';
import { cleanWrittenForm, hasCommaSecondNumber, hasForeignParameter } from './written-form.js';

const { Outcome } = registryv1;

/** Countries whose registries this adapter loads as a local copy. */
export type NumberingCountry = 'mx' | 'ar' | 'co';
export const NUMBERING_COUNTRIES: readonly NumberingCountry[] = ['mx', 'ar', 'co'];

/**
 * The structural classification of one input.
 * - valid: `outcome` is OUTCOME_UNSPECIFIED (the registry lookup decides SAFE or PROHIBITED), `key` is
 *   the registry key of the subscriber line and `e164` the number as libphonenumber-js writes it;
 * - invalid: `outcome` is one of the OUTCOME_INVALID_* values, `key` is 0 and `e164` null.
 */
export interface Classification {
  outcome: registryv1.Outcome;
  key: number;
  e164: string | null;
}

const ISO: Record<NumberingCountry, 'MX' | 'AR' | 'CO'> = { mx: 'MX', ar: 'AR', co: 'CO' };
const CALLING_CODE: Record<NumberingCountry, string> = { mx: '52', ar: '54', co: '57' };

/**
 * Mexico's abolished dialing forms, as libphonenumber-js leaves them in the national number:
 *   1 + 10 digits            `+52 1 55 1234 5678`, `0052 1 ...`, `52 1 ...` (international mobile marker, 2020)
 *   01 + 10 digits           `01 55 1234 5678` (national long-distance prefix, 2019)
 *   044/045 + 10 digits      `044 55 1234 5678` (domestic mobile prefixes, 2020)
 *   521 + 10 digits          `+52 521 ...` (the WhatsApp-style `521` written after an explicit +52)
 * DECISION: the line behind such a form is the 10-digit number, so we normalize to it and look THAT
 * up: a registered subscriber written in an old form is found (prohibited), never `safe`. A form
 * whose 10 digits are not a valid Mexican number stays invalid with the length/number reason.
 * libphonenumber-js itself rejects all of these (no Mexican number is 11-13 digits long).
 */
export function mexicanObsoleteLine(nationalNumber: string): string | undefined {
  const n = nationalNumber;
  if (n.length === 11 && n[0] === '1') return n.slice(1);
  if (n.length === 12 && n.startsWith('01')) return n.slice(2);
  if (n.length === 13 && (n.startsWith('044') || n.startsWith('045') || n.startsWith('521')))
    return n.slice(3);
  return undefined;
}

/**
 * The registry key of a valid national number: the integer value of the national significant number,
 * except Argentina's mobiles, which libphonenumber-js writes as `9` + the 10-digit line
 * (`+54 9 11 4123 4567`, `011 15 4123 4567`): the `9` and `15` are dialing marks, the registry lists
 * the 10-digit line `1141234567`, the same key as the landline spelling `+54 11 4123 4567`.
 * Only mobiles are 11 digits starting with 9 in Argentina (toll-free 800 is the other 11-digit range).
 */
export function lineKey(country: NumberingCountry, nationalNumber: string): number {
  if (country === 'ar' && nationalNumber.length === 11 && nationalNumber[0] === '9') {
    return Number(nationalNumber.slice(1));
  }
  return Number(nationalNumber);
}

const PHONE_CONTEXT = ';phone-context=';

/**
 * libphonenumber-js (1.13.16) validates an RFC 3966 `;phone-context=` with two module-level RegExps
 * created with the `g` flag, so `.test()` resumes at the previous call's `lastIndex` and the same
 * input can be read differently on consecutive calls. A context that fails both patterns resets both
 * `lastIndex` to 0, so every real parse that reaches them starts from the documented, fresh state.
 * (The test "is deterministic for RFC 3966 phone-context URIs" fails if this stops working.)
 */
function resetPhoneContextPatterns(): void {
  try {
    parsePhoneNumberWithError('0;phone-context=!');
  } catch {
    // Expected: NOT_A_NUMBER.
  }
}

function invalid(outcome: registryv1.Outcome): Classification {
  return { outcome, key: 0, e164: null };
}

function parseErrorOutcome(message: string): registryv1.Outcome {
  switch (message) {
    case 'TOO_SHORT':
    case 'TOO_LONG':
      return Outcome.INVALID_LENGTH;
    default:
      // NOT_A_NUMBER, and INVALID_COUNTRY (`+` followed by no known calling code).
      return Outcome.INVALID_UNPARSEABLE;
  }
}

/**
 * The exact classifier: libphonenumber-js `max` metadata decides validity of the written form as the
 * rules read it (`cleanWrittenForm`: Unicode spaces, `interno`); the registry key rules (`lineKey`,
 * `mexicanObsoleteLine`) are applied on top. The fast path must agree with it on every input.
 */
export function classifyReference(country: NumberingCountry, input: string): Classification {
  const text = cleanWrittenForm(input);
  if (text.includes(';') && hasForeignParameter(text)) return invalid(Outcome.INVALID_UNPARSEABLE);
  if (text.includes(',') && hasCommaSecondNumber(text)) return invalid(Outcome.INVALID_UNPARSEABLE);
  return classifyUncleaned(country, text, MAX_EXTENSION_DIGITS);
}

/**
 * Rules revision 4: the most digits an extension is read with. libphonenumber-js takes up to 9 after a
 * one-character label (`#`, `~`, `x`) and up to 20 after a word, so `011 4123 4567 #41234568` or
 * `~ 41234568` was the first number alone and the second, registered, answered `safe` (found by a review,
 * 2026-12-04). A longer extension is a second number in the cell: `unparseable`. The fast path decides
 * extensions of at most this many digits only (fast-scan.ts extensionEnd).
 */
export const MAX_EXTENSION_DIGITS = 6;

/**
 * `classifyReference` of a text as libphonenumber-js reads it, without `cleanWrittenForm` (and, by
 * default, with an extension of any length): the reading of rules revision 1, kept for the test that
 * every input valid then keeps its key.
 */
export function classifyUncleaned(
  country: NumberingCountry,
  text: string,
  maxExtensionDigits = Number.POSITIVE_INFINITY,
): Classification {
  let phone: ReturnType<typeof parsePhoneNumberWithError>;
  if (text.includes(PHONE_CONTEXT)) resetPhoneContextPatterns();
  try {
    phone = parsePhoneNumberWithError(text, { defaultCountry: ISO[country] });
  } catch (error) {
    if (error instanceof ParseError) return invalid(parseErrorOutcome(error.message));
    throw error;
  }
  if (phone.ext !== undefined && phone.ext.length > maxExtensionDigits)
    return invalid(Outcome.INVALID_UNPARSEABLE);
  if (phone.countryCallingCode !== CALLING_CODE[country]) {
    // Read with another country's calling code: `wrong_country`, whether or not it is a valid number
    // there (the caller sent it to the wrong country either way; +1 555 0100 is no Mexican number).
    return invalid(Outcome.INVALID_WRONG_COUNTRY);
  }
  const national = phone.nationalNumber;
  if (phone.isValid()) {
    return { outcome: Outcome.UNSPECIFIED, key: lineKey(country, national), e164: phone.number };
  }
  const line =
    country === 'mx'
      ? mexicanObsoleteLine(national)
      : country === 'ar'
        ? argentineTrunkLine(national)
        : undefined;
  if (line !== undefined && isValidLine(country, line)) {
    return { outcome: Outcome.UNSPECIFIED, key: Number(line), e164: `+${CALLING_CODE[country]}${line}` };
  }
  return invalid(phone.isPossible() ? Outcome.INVALID_NUMBER : Outcome.INVALID_LENGTH);
}

/**
 * Rules revision 4: an Argentine national number libphonenumber-js left as `0` + 10 digits. Its
 * national prefix pattern reads `0 <area> 15` greedily: `0358 415-3627` (Río Cuarto, area 358, line
 * 415-3627) is taken as area 3584 + the mobile mark 15 + 3627, too short, and the input is then kept
 * whole and invalid (found by a review, 2026-12-04: about 0.4% of valid lines in their usual domestic
 * form; a registry file so written had them rejected). Argentine national numbers are 10 digits, and a
 * `15` inside makes 13 with the trunk `0`, so 11 digits starting with `0` can only be the trunk prefix
 * and a 10-digit line: that line, when it is valid.
 */
export function argentineTrunkLine(nationalNumber: string): string | undefined {
  return nationalNumber.length === 11 && nationalNumber[0] === '0' ? nationalNumber.slice(1) : undefined;
}

function isValidLine(country: NumberingCountry, line: string): boolean {
  try {
    return parsePhoneNumberWithError(`+${CALLING_CODE[country]}${line}`).isValid();
  } catch {
    return false;
  }
}

/** `classifyReference` as the hot-path contract: the key, or `-outcome` for an invalid input. */
export function normalizeReference(country: NumberingCountry, input: string): number {
  const c = classifyReference(country, input);
  return c.outcome === Outcome.UNSPECIFIED ? c.key : -c.outcome;
}
