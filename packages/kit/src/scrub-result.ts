import type { InvalidReason } from '@dnc/api-contract/limits';
import { registryv1 } from '@dnc/proto';

const { Outcome } = registryv1;

/**
 * THE mapping from an adapter's invalid outcome to its public `reason` (the documented vocabulary,
 * `INVALID_REASONS` of the contract): v1 results, v2 results and the adapter's own checks all read it.
 */
export const OUTCOME_REASONS: ReadonlyMap<registryv1.Outcome, InvalidReason> = new Map([
  [Outcome.INVALID_UNPARSEABLE, 'unparseable'],
  [Outcome.INVALID_LENGTH, 'invalid_length'],
  [Outcome.INVALID_NUMBER, 'invalid_number'],
  [Outcome.INVALID_WRONG_COUNTRY, 'wrong_country'],
  [Outcome.INVALID_OBSOLETE_FORMAT, 'obsolete_format'],
  [Outcome.INVALID_REGISTRY_REJECTED, 'registry_rejected'],
]);

/** The public reason of an invalid outcome; undefined for SAFE, PROHIBITED and UNSPECIFIED. */
export function reasonOf(outcome: registryv1.Outcome): InvalidReason | undefined {
  return OUTCOME_REASONS.get(outcome);
}

export interface ScrubResult {
  prohibited_numbers_to_call: string[];
  safe_numbers_to_call: string[];
  invalid_numbers: { input: string; reason: InvalidReason }[];
  summary: {
    total_checked: number;
    prohibited_numbers: number;
    safe_numbers: number;
    invalid_numbers: number;
  };
}

/**
 * The adapter's answer did not cover every input with a known outcome. Such an answer is never
 * turned into a result: a missing or unknown outcome must not become `safe`.
 */
export class IncompleteAnswerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'IncompleteAnswerError';
  }
}

/**
 * Split the ORIGINAL inputs by outcome, keeping their relative order and duplicates. Every input is
 * counted once in total_checked; the three counts always add up to it.
 */
export function buildScrubResult(phones: readonly string[], outcomes: ArrayLike<number>): ScrubResult {
  if (outcomes.length !== phones.length) {
    throw new IncompleteAnswerError(`answer has ${outcomes.length} outcomes for ${phones.length} inputs`);
  }
  const prohibited: string[] = [];
  const safe: string[] = [];
  const invalid: { input: string; reason: InvalidReason }[] = [];
  for (let i = 0; i < phones.length; i++) {
    const outcome = outcomes[i]!;
    const input = phones[i]!;
    if (outcome === Outcome.PROHIBITED) prohibited.push(input);
    else if (outcome === Outcome.SAFE) safe.push(input);
    else {
      const reason = reasonOf(outcome as registryv1.Outcome);
      if (reason === undefined) throw new IncompleteAnswerError(`unknown outcome ${outcome}`);
      invalid.push({ input, reason });
    }
  }
  return {
    prohibited_numbers_to_call: prohibited,
    safe_numbers_to_call: safe,
    invalid_numbers: invalid,
    summary: {
      total_checked: phones.length,
      prohibited_numbers: prohibited.length,
      safe_numbers: safe.length,
      invalid_numbers: invalid.length,
    },
  };
}
