import { LIMITS } from '@dnc/api-contract/limits';
import { registryv1 } from '@dnc/proto';
import { type CountryCode, ParseError, parsePhoneNumberWithError } from 'libphonenumber-js/max';
import type { AdapterCountry } from './config.js';
import { createNumbering } from './numbering/index.js';

const { Outcome } = registryv1;

/**
 * Structural validation of one written form: the registry key of the subscriber line (a positive
 * integer, the same for every way the line can be written) or `-Outcome` (an OUTCOME_INVALID_* value)
 * for an input that is not a valid number of this country. Load and Check use the same normalizer, so
 * every written form of a registered number is found.
 */
export interface Normalizer {
  normalize(input: string): number;
}

/**
 * The normalizer of a country: the fast path generated from libphonenumber-js metadata for the live
 * countries (differentially tested against the reference, see src/numbering).
 */
export function createNormalizer(country: AdapterCountry): Normalizer {
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
 * national significant number. These registries are washed remotely, so there is no local key format
 * to agree with; the remote provider sends E.164.
 */
function technicalNormalizer(country: 'es' | 'au' | 'sg'): Normalizer {
  const iso = country.toUpperCase() as CountryCode;
  return {
    normalize(input) {
      try {
        const phone = parsePhoneNumberWithError(input, { defaultCountry: iso });
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

/** E.164 of a registry key, for providers that talk to a registry by full number. */
export const CALLING_CODES: Record<AdapterCountry, string> = {
  mx: '52',
  ar: '54',
  co: '57',
  es: '34',
  au: '61',
  sg: '65',
};

export function keyToE164(country: AdapterCountry, key: number): string {
  return `+${CALLING_CODES[country]}${key}`;
}

/** A normalizer result that is a registry key (anything else is an invalid outcome). */
export function isRegistryKey(value: number): boolean {
  return value > 0 && Number.isSafeInteger(value);
}

/**
 * Longest accepted written form of one phone, in characters (Unicode code points, counted by
 * `isPhoneWithinLimit` of the contract): Check rejects longer inputs; Load counts them as bad.
 */
export const MAX_PHONE_LENGTH = LIMITS.maxPhoneLength;
