import { isLiveCountry, LIMITS } from '@dnc/api-contract';
import {
  type InvalidOutcomeOf,
  quotedBytes,
  UNDECIDED_OUTCOME,
  validatedResultBytes,
  worstResultBytes,
} from '@dnc/kit';
import { decideFast, NUMBERING_RULES, outcomeOfNormalized, UNDECIDED } from '@dnc/numbering';
import { canonicalFromBody } from './canonical-input.js';
import { BodyPhones } from './scrub-body.js';

/** A v2 job's durable input and the conservative estimate of its complete result (spec: v2 limits). */
export interface DurableSizes {
  /** The phones as one UTF-8 JSON array, in order: the durable input exactly as the scheduler stores it. */
  canonical: Buffer;
  /** Never below the byte length of the complete result, under the assumption `resultRules` names. */
  resultBytes: number;
  /**
   * Empty when `resultBytes` holds whatever the adapters answer (every input at its worst). Otherwise
   * the numbering rules the inputs were validated with: the estimate then holds for adapters that
   * answer invalid exactly by those rules and never reject a valid number, which admission checks
   * against discovery (AdmitRequest.result_rules).
   */
  resultRules: string;
}

/**
 * The structural outcome of an input by the adapter's rules, as far as the fast path decides it (the
 * inputs people send: digits, separators, `+`); anything it leaves to the slow reference parser is
 * counted at its worst rather than parsed here, so a body of 500,000 odd strings costs no more than
 * 500,000 numbers.
 */
export function structuralOutcome(country: 'mx' | 'ar' | 'co'): InvalidOutcomeOf {
  return (phone) => {
    const decided = decideFast(country, phone);
    return decided === UNDECIDED ? UNDECIDED_OUTCOME : outcomeOfNormalized(decided);
  };
}

/**
 * The durable input and the result estimate. The cheap worst case (every input an `invalid_numbers`
 * entry with the longest reason) is kept when it fits 25 MiB; only a body whose worst case does not
 * fit is validated, with the adapter's own rules (@dnc/numbering), so the invalid entries are counted
 * for the inputs that are invalid and the rest at their safe/prohibited size (`structuralOutcome`). Validation stops as
 * soon as the inputs not yet validated fit even at their worst. Technical countries (refused at
 * admission anyway) keep the worst case. `body`, when given, is the request body the phones were parsed
 * from: the canonical input is a slice of it when it already is that (canonical-input.ts). Phones read
 * on the body's bytes (scrub-body.ts) carry that slice themselves.
 */
export function durableInput(
  country: string,
  phones: readonly string[] | BodyPhones,
  body?: Buffer,
): DurableSizes {
  const canonical =
    phones instanceof BodyPhones
      ? phones.canonical
      : (canonicalFromBody(body, phones) ?? Buffer.from(JSON.stringify(phones), 'utf8'));
  const quoted = quotedBytes(canonical.length, phones.length);
  const worst = worstResultBytes(phones.length, quoted);
  const limit = LIMITS.maxBodyBytes;
  if (worst <= limit || canonical.length > limit || !isLiveCountry(country)) {
    return { canonical, resultBytes: worst, resultRules: '' };
  }
  const bound = validatedResultBytes(phones, quoted, structuralOutcome(country), limit);
  return { canonical, resultBytes: bound.bytes, resultRules: NUMBERING_RULES };
}
