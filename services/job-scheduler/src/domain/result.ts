import { OUTCOME_REASONS } from '@dnc/kit';
import { registryv1 } from '@dnc/proto';

const { Outcome } = registryv1;

// The same reason map as v1 (kit's OUTCOME_REASONS), so v1 and v2 classify every input alike.
const INVALID_REASON = OUTCOME_REASONS;

/** An outcome the result can be built from; anything else makes the answer inconclusive. */
export function isConclusive(outcome: registryv1.Outcome): boolean {
  return outcome === Outcome.SAFE || outcome === Outcome.PROHIBITED || INVALID_REASON.has(outcome);
}

export interface ResultSummary {
  total_checked: number;
  prohibited_numbers: number;
  safe_numbers: number;
  invalid_numbers: number;
}

/**
 * The ScrubResult JSON document (same model as v1) as consecutive text pieces of about
 * `pieceChars` characters, so a 500,000-input result is sealed segment by segment instead of being
 * built as one string. Original inputs in input order; duplicates kept; invalid entries carry their
 * reason. Every outcome must be conclusive (checked by the caller before).
 */
export function* renderResult(
  phones: readonly string[],
  outcomes: ArrayLike<registryv1.Outcome>,
  pieceChars = 1 << 20,
): Generator<string, ResultSummary> {
  if (phones.length !== outcomes.length) throw new Error('outcome count differs from input count');
  let prohibited = 0;
  let safe = 0;
  let invalid = 0;
  for (let i = 0; i < outcomes.length; i++) {
    const o = outcomes[i]!;
    if (o === Outcome.PROHIBITED) prohibited++;
    else if (o === Outcome.SAFE) safe++;
    else if (INVALID_REASON.has(o)) invalid++;
    else throw new Error('inconclusive outcome');
  }
  let buffer = '';
  function* flush(force: boolean): Generator<string> {
    if (buffer.length >= pieceChars || (force && buffer.length > 0)) {
      yield buffer;
      buffer = '';
    }
  }
  function* list(name: string, pick: registryv1.Outcome, first: boolean): Generator<string> {
    buffer += `${first ? '{' : ','}"${name}":[`;
    let n = 0;
    for (let i = 0; i < phones.length; i++) {
      if (outcomes[i] !== pick) continue;
      buffer += (n++ === 0 ? '' : ',') + JSON.stringify(phones[i]);
      yield* flush(false);
    }
    buffer += ']';
  }
  yield* list('prohibited_numbers_to_call', Outcome.PROHIBITED, true);
  yield* list('safe_numbers_to_call', Outcome.SAFE, false);
  buffer += ',"invalid_numbers":[';
  let n = 0;
  for (let i = 0; i < phones.length; i++) {
    const reason = INVALID_REASON.get(outcomes[i]!);
    if (reason === undefined) continue;
    buffer += `${n++ === 0 ? '' : ','}{"input":${JSON.stringify(phones[i])},"reason":"${reason}"}`;
    yield* flush(false);
  }
  const summary: ResultSummary = {
    total_checked: phones.length,
    prohibited_numbers: prohibited,
    safe_numbers: safe,
    invalid_numbers: invalid,
  };
  buffer += `],"summary":${JSON.stringify(summary)}}`;
  yield* flush(true);
  return summary;
}
