import { classifyFast, normalizeFast } from './fast.js';
import {
  type Classification,
  classifyReference,
  type NumberingCountry,
  normalizeReference,
} from './reference.js';

export type NumberingImplementation = 'fast' | 'reference';

/** Phone number validation and registry keys for one country. */
export interface Numbering {
  readonly country: NumberingCountry;
  readonly implementation: NumberingImplementation;
  /**
   * The registry key (a positive integer < 2^53 naming the subscriber line, the same for every
   * written form) of a valid number, or `-outcome` (a negative OUTCOME_INVALID_* value) of an invalid
   * one. The fast implementation allocates nothing for the inputs it decides itself.
   */
  normalize(input: string): number;
  /** Outcome, key and E.164 for tests and diagnostics; OUTCOME_UNSPECIFIED means valid. */
  classify(input: string): Classification;
}

export function createNumbering(
  country: NumberingCountry,
  implementation: NumberingImplementation,
): Numbering {
  if (country !== 'mx' && country !== 'ar' && country !== 'co') {
    throw new Error(`no numbering plan for country ${JSON.stringify(country)}`);
  }
  if (implementation === 'fast') {
    return {
      country,
      implementation,
      normalize: (input) => normalizeFast(country, input),
      classify: (input) => classifyFast(country, input),
    };
  }
  if (implementation === 'reference') {
    return {
      country,
      implementation,
      normalize: (input) => normalizeReference(country, input),
      classify: (input) => classifyReference(country, input),
    };
  }
  throw new Error(`unknown numbering implementation ${JSON.stringify(implementation)}`);
}
