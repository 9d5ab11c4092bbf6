import { registryv1 } from '@dnc/proto';
import { OUTCOME_REASONS } from './scrub-result.js';

// Byte bounds of a complete ScrubResult as it is served: JSON.stringify(buildScrubResult(...)) in
// UTF-8 (the job-scheduler's ResultBuilder writes the same bytes). The document is
//
//   {"prohibited_numbers_to_call":[P items],"safe_numbers_to_call":[S items],"invalid_numbers":[I items],
//    "summary":{"total_checked":N,"prohibited_numbers":P,"safe_numbers":S,"invalid_numbers":I}}
//
// where a prohibited or safe item is the input as a JSON string (q bytes) and an invalid item is
// {"input":<q bytes>,"reason":"<reason>"}; a list of k items has k - 1 commas. So, exactly,
//
//   bytes = FIXED + Q + sum over invalid items (INVALID_ITEM + reason) + h(P) + h(S) + h(I) + digits(N)
//
// with Q the inputs' quoted bytes (all of them, wherever they land) and h(k) = commas(k) + digits(k).

const FIXED =
  '{"prohibited_numbers_to_call":[],"safe_numbers_to_call":[],"invalid_numbers":[],"summary":{}}'.length +
  '"total_checked":,"prohibited_numbers":,"safe_numbers":,"invalid_numbers":'.length;
/** What an invalid item adds to its input's quoted bytes, besides its reason. */
const INVALID_ITEM = '{"input":,"reason":""}'.length;
const LONGEST_REASON = Math.max(...[...OUTCOME_REASONS.values()].map((r) => r.length));
/** Inputs validated between two checks of whether the rest may be assumed invalid. */
const CHECKPOINT = 4096;

/**
 * The inputs in order: an array, or a list read from the request's bytes that makes each input only when
 * it is asked for (the gateway's v2 body). `at` as `Array.prototype.at`, for indexes within the length.
 */
export interface PhoneSequence {
  readonly length: number;
  at(index: number): string | undefined;
}

const digits = (n: number): number => String(n).length;
/** Commas and count digits a list of k items adds: h(k). */
const listBytes = (k: number): number => (k > 0 ? k - 1 : 0) + digits(k);

/** The inputs' quoted bytes Q, from the canonical input (`JSON.stringify(phones)` in UTF-8). */
export function quotedBytes(canonicalBytes: number, count: number): number {
  return canonicalBytes - 2 - Math.max(0, count - 1);
}

/**
 * The result's size whatever the adapter answers: every input an invalid item with the longest
 * reason, every list's commas and every count at its largest. Never below the real size.
 */
export function worstResultBytes(count: number, quoted: number): number {
  return FIXED + quoted + (INVALID_ITEM + LONGEST_REASON + 1) * count + 4 * digits(count);
}

/**
 * max over P + S = valid of h(P) + h(S): the prohibited/safe split the registry decides, at its
 * largest. Each side is empty (h = 1) or has d digits (k in [10^(d-1), 10^d - 1], h = k - 1 + d).
 */
function splitBytes(valid: number): number {
  if (valid === 0) return 2 * listBytes(0);
  let best = listBytes(0) + listBytes(valid);
  const top = digits(valid);
  for (let dp = 1; dp <= top; dp++) {
    for (let ds = 1; ds <= top; ds++) {
      const low = Math.max(10 ** (dp - 1), valid - (10 ** ds - 1));
      const high = Math.min(10 ** dp - 1, valid - 10 ** (ds - 1));
      if (low <= high) best = Math.max(best, valid - 2 + dp + ds);
    }
  }
  return best;
}

/**
 * The structural outcome of one input: OUTCOME_UNSPECIFIED (0) when it is valid (the registry decides
 * SAFE or PROHIBITED), its OUTCOME_INVALID_* value, or UNDECIDED_OUTCOME.
 */
export type InvalidOutcomeOf = (input: string) => number;

/**
 * An input whose outcome is not worth deciding here (say, one only the slow reference parser reads):
 * counted as an invalid entry with the longest reason. That is never below what it really adds: as a
 * prohibited or safe item it would add 39 bytes less to the invalid entries, and at most 2 more to
 * the prohibited/safe split.
 */
export const UNDECIDED_OUTCOME = -1;

export interface ResultBound {
  /** Never below the real size of the result, if the adapter answers invalid exactly as `invalidOf`. */
  bytes: number;
  /** Inputs validated (the rest were counted at their worst once that fitted within `limit`). */
  validated: number;
}

/**
 * The result's size when the adapter answers an input invalid exactly when `invalidOf` does, with
 * its reason, and every valid input SAFE or PROHIBITED (no registry rejection): the invalid items
 * are known, the prohibited/safe split is taken at its largest. Exact for such an adapter whenever
 * the registry's split reaches that largest case (e.g. every valid input safe when their count has
 * the form 1xxxx).
 *
 * Validation stops early, once the inputs not yet validated fit within `limit` even as invalid items
 * with the longest reason: the bound returned then is above the exact one and within `limit`. So
 * `bytes <= limit` exactly when the exact bound is.
 */
export function validatedResultBytes(
  phones: PhoneSequence,
  quoted: number,
  invalidOf: InvalidOutcomeOf,
  limit: number,
): ResultBound {
  const n = phones.length;
  const base = FIXED + quoted + digits(n);
  // While validating: the remaining inputs at their worst, every list's commas and counts at theirs.
  const looseTail = Math.max(0, n - 1) + 3 * digits(n);
  let invalid = 0;
  let invalidBytes = 0;
  for (let i = 0; i < n; i++) {
    if (i % CHECKPOINT === 0 && i > 0) {
      const loose = base + invalidBytes + (n - i) * (INVALID_ITEM + LONGEST_REASON) + looseTail;
      if (loose <= limit) return { bytes: loose, validated: i };
    }
    const outcome = invalidOf(phones.at(i) as string);
    if (outcome === registryv1.Outcome.UNSPECIFIED) continue;
    invalid++;
    // An undecided (or unknown) outcome counts with the longest reason.
    invalidBytes +=
      INVALID_ITEM + (OUTCOME_REASONS.get(outcome as registryv1.Outcome)?.length ?? LONGEST_REASON);
  }
  return { bytes: base + invalidBytes + listBytes(invalid) + splitBytes(n - invalid), validated: n };
}

/** The message of a 413 for a result estimate over 25 MiB (the gateway's and admission's). */
export const RESULT_TOO_LARGE_MESSAGE =
  'The complete result of this job could exceed 26,214,400 bytes; submit fewer or shorter inputs.';
