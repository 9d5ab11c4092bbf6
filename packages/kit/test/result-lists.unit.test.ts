import { registryv1 } from '@dnc/proto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type ElementRun,
  renderResultLists,
  renderScrubResult,
  summarizeOutcomes,
} from '../src/result-lists.js';
import { buildScrubResult, IncompleteAnswerError, OUTCOME_REASONS } from '../src/scrub-result.js';

const { Outcome } = registryv1;

/**
 * Phones as the JSON text of an array's elements, cut into runs of separate buffers: element i's text
 * is `JSON.stringify(phone)` in UTF-8, a comma after each (the layout `ElementRun` describes).
 */
function runsOf(phones: readonly string[], cuts: readonly number[]): ElementRun[] {
  const bounds = [...new Set([0, ...cuts.map((c) => c % (phones.length + 1)), phones.length])].sort(
    (a, b) => a - b,
  );
  const runs: ElementRun[] = [];
  for (let r = 0; r + 1 < bounds.length; r++) {
    const slice = phones.slice(bounds[r], bounds[r + 1]);
    const texts = slice.map((p) => Buffer.from(`${JSON.stringify(p)},`, 'utf8'));
    // A few bytes of something else before the first element: a run need not start its buffer.
    const lead = r % 2;
    const starts = [lead];
    for (const t of texts) starts.push(starts[starts.length - 1]! + t.length);
    runs.push({
      bytes: Buffer.concat([Buffer.alloc(lead, 0x20), ...texts]),
      starts,
      first: 0,
      end: slice.length,
    });
  }
  return runs;
}

/** Every outcome a result takes: safe, prohibited and each invalid reason. */
const CONCLUSIVE = [Outcome.SAFE, Outcome.PROHIBITED, ...OUTCOME_REASONS.keys()];

describe('a ScrubResult rendered from the phones’ bytes (v1 on its body’s bytes, v2 in the worker)', () => {
  it('is byte for byte JSON.stringify of buildScrubResult, for any phones, outcomes and runs', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.string(),
            fc.string({ unit: 'grapheme' }),
            fc.string({ unit: 'binary' }),
            fc.stringMatching(/^\+57[0-9]{10}$/),
          ),
          {
            maxLength: 60,
          },
        ),
        fc.array(fc.constantFrom(...CONCLUSIVE), { minLength: 60, maxLength: 60 }),
        fc.array(fc.nat(), { maxLength: 4 }),
        (phones, pool, cuts) => {
          const outcomes = phones.map((_, i) => pool[i]!);
          const summary = summarizeOutcomes(outcomes, phones.length);
          const rendered = renderScrubResult(runsOf(phones, cuts), outcomes, summary);
          const expected = buildScrubResult(phones, outcomes);
          expect(summary).toEqual(expected.summary);
          expect(rendered.toString('utf8')).toBe(JSON.stringify(expected));
          // Each list's items alone (the job worker's units): the list's JSON without its brackets.
          const lists = renderResultLists(runsOf(phones, cuts), outcomes);
          const items = (list: unknown[]) =>
            list.length === 0 ? undefined : JSON.stringify(list).slice(1, -1);
          expect(lists.prohibited?.toString('utf8')).toBe(items(expected.prohibited_numbers_to_call));
          expect(lists.safe?.toString('utf8')).toBe(items(expected.safe_numbers_to_call));
          expect(lists.invalid?.toString('utf8')).toBe(items(expected.invalid_numbers));
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('refuses an answer that is not complete: a missing or unknown outcome never becomes safe', () => {
    expect(() => summarizeOutcomes([Outcome.SAFE], 2)).toThrow(IncompleteAnswerError);
    expect(() => summarizeOutcomes([Outcome.SAFE, Outcome.SAFE, Outcome.SAFE], 2)).toThrow(
      IncompleteAnswerError,
    );
    expect(() => summarizeOutcomes([Outcome.SAFE, Outcome.UNSPECIFIED], 2)).toThrow(IncompleteAnswerError);
    expect(() => summarizeOutcomes([Outcome.SAFE, 99], 2)).toThrow(IncompleteAnswerError);
    expect(() => renderResultLists(runsOf(['1', '2'], []), [Outcome.SAFE, Outcome.UNSPECIFIED])).toThrow(
      IncompleteAnswerError,
    );
    expect(summarizeOutcomes([], 0)).toEqual({
      total_checked: 0,
      prohibited_numbers: 0,
      safe_numbers: 0,
      invalid_numbers: 0,
    });
    expect(renderScrubResult([], [], summarizeOutcomes([], 0)).toString()).toBe(
      JSON.stringify(buildScrubResult([], [])),
    );
  });
});
