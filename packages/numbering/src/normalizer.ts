import type { CountryCode } from '@dnc/api-contract/limits';
import { registryv1 } from '@dnc/proto';
import { type CountryCode as IsoCountry, ParseError, parsePhoneNumberWithError } from 'libphonenumber-js/max';
import { TABLES_LIBPHONENUMBER_VERSION } from './fast.js';
import { createNumbering } from './numbering.js';
import { MAX_EXTENSION_DIGITS } from './reference.js';
import { cleanWrittenForm, hasCommaSecondNumber, hasForeignParameter } from './written-form.js';

const { Outcome } = registryv1;

/**
 * Structural validation of one written form: the registry key of the subscriber line (a positive
 * integer, the same for every way the line can be written) or `-Outcome` (an OUTCOME_INVALID_* value)
 * for an input that is not a valid number of this country. The adapter loads and checks with it; the
 * gateway bounds a v2 job's result with it. One owner of the rules: this package.
 */
export interface Normalizer {
  normalize(input: string): number;
}

/**
 * Names the rules `createNormalizer` applies, so two processes can tell whether they validate alike:
 * the libphonenumber-js metadata (the generated tables and the reference are checked to match it in
 * CI) and the revision of this package's own rules (registry keys, Mexico's abolished forms, the
 * technical countries' reading). Bump RULES_REVISION with any change that moves an input between
 * valid and invalid or between invalid reasons.
 *   1  libphonenumber-js reads the input as it is.
 *   2  tabs and Unicode spaces read as spaces, `interno` as an extension label (written-form.ts):
 *      inputs invalid under 1 (mostly `unparseable`) become valid or change reason; an input valid
 *      under 1 keeps its key.
 *   3  digits after a `;` outside an `ext=`, `isub=` or `phone-context=` parameter (a second number in
 *      the cell) make the input `unparseable` (written-form.ts hasForeignParameter); valid under 2
 *      before, keyed on the first number. Every other input keeps its reading.
 *   4  six digits or more after a comma read as an unlabelled extension, or an extension of more than
 *      six digits after any label (a second number in the cell), make the input `unparseable`
 *      (written-form.ts hasCommaSecondNumber, reference.ts MAX_EXTENSION_DIGITS), valid under 3 before
 *      and keyed on the first number; an Argentine `0` + 10-digit line libphonenumber-js read as `0 <area>
 *      15 ...` and kept invalid is that line (reference.ts argentineTrunkLine), `invalid_number` or
 *      `invalid_length` under 3. Every input valid under 3 and not in the first case keeps its key.
 */
const RULES_REVISION = 4;
export const NUMBERING_RULES = `dnc-numbering/${RULES_REVISION} libphonenumber-js@${TABLES_LIBPHONENUMBER_VERSION}`;

/**
 * The normalizer of a country: the fast path generated from libphonenumber-js metadata for the live
 * countries (differentially tested against the reference), libphonenumber-js itself for the technical
 * ones.
 */
export function createNormalizer(country: CountryCode): Normalizer {
  switch (country) {
    case 'mx':
    case 'ar':
    case 'co':
      return createNumbering(country, 'fast');
    default:
      return technicalNormalizer(country);
  }
}

/**
 * Technical countries (remote registries only): libphonenumber-js `max` decides, the key is the
 * national significant number of the written form as the live countries read it (`cleanWrittenForm`).
 * These registries are washed remotely, so there is no local key format to agree with; the remote
 * provider sends E.164.
 */
function technicalNormalizer(country: 'es' | 'au' | 'sg'): Normalizer {
  const iso = country.toUpperCase() as IsoCountry;
  return {
    normalize(input) {
      const text = cleanWrittenForm(input);
      if (text.includes(';') && hasForeignParameter(text)) return -Outcome.INVALID_UNPARSEABLE;
      if (text.includes(',') && hasCommaSecondNumber(text)) return -Outcome.INVALID_UNPARSEABLE;
      try {
        const phone = parsePhoneNumberWithError(text, { defaultCountry: iso });
        if (phone.ext !== undefined && phone.ext.length > MAX_EXTENSION_DIGITS)
          return -Outcome.INVALID_UNPARSEABLE;
        if (phone.country !== iso) {
          return phone.isValid() ? -Outcome.INVALID_WRONG_COUNTRY : -Outcome.INVALID_NUMBER;
        }
        if (!phone.isValid()) return phone.isPossible() ? -Outcome.INVALID_NUMBER : -Outcome.INVALID_LENGTH;
        return Number(phone.nationalNumber);
      } catch (error) {
        if (error instanceof ParseError && (error.message === 'TOO_SHORT' || error.message === 'TOO_LONG'))
          return -Outcome.INVALID_LENGTH;
        return -Outcome.INVALID_UNPARSEABLE;
      }
    },
  };
}

/** A normalizer result that is a registry key (anything else is an invalid outcome). */
export function isRegistryKey(value: number): boolean {
  return value > 0 && Number.isSafeInteger(value);
}

/**
 * The structural outcome of a `normalize()` result: OUTCOME_UNSPECIFIED for a registry key (valid:
 * the registry decides), else its OUTCOME_INVALID_* value; anything else a normalizer might return
 * reads as unparseable, never as valid. The adapter's Check and the gateway's v2 result bound both
 * read inputs through it.
 */
export function outcomeOfNormalized(normalized: number): registryv1.Outcome {
  if (isRegistryKey(normalized)) return Outcome.UNSPECIFIED;
  const o = -normalized;
  return o >= Outcome.INVALID_UNPARSEABLE && o <= Outcome.INVALID_REGISTRY_REJECTED && Number.isInteger(o)
    ? (o as registryv1.Outcome)
    : Outcome.INVALID_UNPARSEABLE;
}
