import { LIMITS } from '@dnc/api-contract/limits';
import type { AdapterCountry } from './config.js';

// Structural validation (the normalizer) lives in @dnc/numbering, shared with the gateway's v2 result
// estimate: one owner of the rules.
export { createNormalizer, isRegistryKey, type Normalizer, NUMBERING_RULES } from '@dnc/numbering';

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

/**
 * Longest accepted written form of one phone, in characters (Unicode code points, counted by
 * `isPhoneWithinLimit` of the contract): Check rejects longer inputs; Load counts them as bad.
 */
export const MAX_PHONE_LENGTH = LIMITS.maxPhoneLength;
