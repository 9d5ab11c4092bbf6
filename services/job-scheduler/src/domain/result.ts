import {
  type ListItems,
  OUTCOME_REASONS,
  RESULT_LISTS,
  renderResultLists,
  type ScrubResult,
  summarizeOutcomes,
} from '@dnc/kit';
import { registryv1 } from '@dnc/proto';
import type { InputElements } from './input-elements.js';

const { Outcome } = registryv1;

// The same reason map as v1 (kit's OUTCOME_REASONS), so v1 and v2 classify every input alike.
const INVALID_REASON = OUTCOME_REASONS;

/** An outcome the result can be built from; anything else makes the answer inconclusive. */
export function isConclusive(outcome: registryv1.Outcome): boolean {
  return outcome === Outcome.SAFE || outcome === Outcome.PROHIBITED || INVALID_REASON.has(outcome);
}

/** The result's summary, as v1's (kit's `summarizeOutcomes` counts a unit's). */
export type ResultSummary = ScrubResult['summary'];

/** A unit's items of each list (kit's `renderResultLists`). */
interface RenderedUnit {
  count: number;
  prohibited: ListItems;
  safe: ListItems;
  invalid: ListItems;
}

/**
 * The ScrubResult JSON document (same model as v1), rendered unit by unit as each unit's answers come
 * back, and read back in document order once every input is answered. A job's units are answered by
 * the adapter one after another while the worker waits: each is rendered then (its three lists' items),
 * so what is left when the last unit answers is that unit's share, not the whole document.
 *
 * Original inputs in input order; duplicates kept; invalid entries carry their reason. Every outcome
 * must be conclusive (checked by the caller before; an inconclusive one throws here). A unit's lists
 * are copied from the input's own bytes (InputElements) into one buffer, outside V8's heap, by kit's
 * `renderResultLists` (v1 renders with the same code): no string is made for a phone. The text is the
 * same, byte for byte, as `JSON.stringify` of v1's document, however the inputs are cut into units and
 * in whatever order the units are answered.
 */
export class ResultBuilder {
  private readonly units = new Map<number, RenderedUnit>();
  private answered = 0;
  private prohibited = 0;
  private safe = 0;
  private invalid = 0;

  constructor(readonly total: number) {}

  /** The answers of inputs [from, from + phones.length), rendered now. */
  add(from: number, phones: InputElements, outcomes: ArrayLike<registryv1.Outcome>): void {
    if (phones.length !== outcomes.length) throw new Error('outcome count differs from input count');
    if (this.units.has(from) || from < 0 || from + phones.length > this.total)
      throw new Error('unit outside the input or answered twice');
    // Each outcome safe, prohibited or a known invalid reason (IncompleteAnswerError otherwise).
    const counts = summarizeOutcomes(outcomes, phones.length);
    this.units.set(from, { count: phones.length, ...renderResultLists(phones.runs, outcomes) });
    this.answered += phones.length;
    this.prohibited += counts.prohibited_numbers;
    this.safe += counts.safe_numbers;
    this.invalid += counts.invalid_numbers;
  }

  /** The document in order, text and bytes; every input must have been answered, each exactly once. */
  *document(): Generator<string | Buffer, ResultSummary> {
    const starts = [...this.units.keys()].sort((a, b) => a - b);
    let next = 0;
    for (const from of starts) {
      if (from !== next) break;
      next += (this.units.get(from) as RenderedUnit).count;
    }
    if (this.answered !== this.total || next !== this.total)
      throw new Error('outcome count differs from input count');
    for (const [open, key] of RESULT_LISTS) {
      let head: string = open;
      for (const from of starts) {
        const items = (this.units.get(from) as RenderedUnit)[key];
        if (items === undefined) continue;
        yield head;
        yield items;
        head = ',';
      }
      if (head === open) yield open;
    }
    const summary: ResultSummary = {
      total_checked: this.total,
      prohibited_numbers: this.prohibited,
      safe_numbers: this.safe,
      invalid_numbers: this.invalid,
    };
    yield `],"summary":${JSON.stringify(summary)}}`;
    return summary;
  }
}
