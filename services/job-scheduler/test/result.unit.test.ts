import { buildScrubResult, Code, ConnectError, IncompleteAnswerError, publicError } from '@dnc/kit';
import { registryv1 } from '@dnc/proto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CanonicalInputReader } from '../src/domain/canonical-input.js';
import { backoffMs, classifyAdapterError, publicJobError } from '../src/domain/failures.js';
import { InputElements } from '../src/domain/input-elements.js';
import { ResultBuilder, type ResultSummary } from '../src/domain/result.js';

const { Outcome } = registryv1;

/** The document's text, and the summary the generator returns. */
function textOf(gen: Generator<string | Buffer, ResultSummary>): { text: string; summary: ResultSummary } {
  let text = '';
  let r = gen.next();
  while (!r.done) {
    text += r.value.toString();
    r = gen.next();
  }
  return { text, summary: r.value };
}

/**
 * The phones as a job holds them: its canonical input's bytes, read in pieces cut at `cuts` (byte
 * offsets), so the elements span several runs as a streamed input's do.
 */
function elementsOf(phones: string[], cuts: number[] = []): InputElements {
  const bytes = Buffer.from(JSON.stringify(phones), 'utf8');
  const reader = new CanonicalInputReader();
  const parts: InputElements[] = [];
  let from = 0;
  for (const at of [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b)) {
    parts.push(reader.push(bytes.subarray(from, at)));
    from = at;
  }
  parts.push(reader.push(bytes.subarray(from)), reader.end());
  return InputElements.concat(parts);
}

/** The document of inputs answered at once, as one unit. */
function render(phones: string[], outcomes: registryv1.Outcome[], cuts: number[] = []) {
  const builder = new ResultBuilder(phones.length);
  if (phones.length > 0 || outcomes.length > 0) builder.add(0, elementsOf(phones, cuts), outcomes);
  const { text, summary } = textOf(builder.document());
  return { doc: JSON.parse(text), summary, text };
}

/** Inputs of any characters, each with a conclusive outcome. */
const inputRows = (maxChars: number, maxLength: number) =>
  fc.array(
    fc.tuple(
      fc.string({ maxLength: maxChars, unit: 'binary' }),
      fc.constantFrom(
        Outcome.SAFE,
        Outcome.PROHIBITED,
        Outcome.INVALID_UNPARSEABLE,
        Outcome.INVALID_LENGTH,
        Outcome.INVALID_OBSOLETE_FORMAT,
        Outcome.INVALID_REGISTRY_REJECTED,
      ),
    ),
    { maxLength },
  );

describe('ScrubResult of a job (same model as v1)', () => {
  it('original inputs in order, duplicates kept, invalid with reasons, summary adds up', () => {
    const phones = ['55 1234 5678', '+52 55 1234 5678', 'abc', '55 1234 5678', '044 55 1111 2222', 'x"y\\'];
    const outcomes = [
      Outcome.PROHIBITED,
      Outcome.SAFE,
      Outcome.INVALID_UNPARSEABLE,
      Outcome.PROHIBITED,
      Outcome.INVALID_OBSOLETE_FORMAT,
      Outcome.INVALID_REGISTRY_REJECTED,
    ];
    const { doc } = render(phones, outcomes, [8]);
    expect(doc).toEqual({
      prohibited_numbers_to_call: ['55 1234 5678', '55 1234 5678'],
      safe_numbers_to_call: ['+52 55 1234 5678'],
      invalid_numbers: [
        { input: 'abc', reason: 'unparseable' },
        { input: '044 55 1111 2222', reason: 'obsolete_format' },
        { input: 'x"y\\', reason: 'registry_rejected' },
      ],
      summary: { total_checked: 6, prohibited_numbers: 2, safe_numbers: 1, invalid_numbers: 3 },
    });
    expect(Object.keys(doc)).not.toContain('matched');
  });

  it("is v1's document byte for byte, whatever the inputs and however the input's bytes were cut", () => {
    fc.assert(
      fc.property(inputRows(20, 60), fc.array(fc.nat(), { maxLength: 8 }), (rows, cuts) => {
        const phones = rows.map(([p]) => p);
        const outcomes = rows.map(([, o]) => o);
        const { text, summary } = render(phones, outcomes, cuts);
        const v1 = buildScrubResult(phones, outcomes);
        expect(text).toBe(JSON.stringify(v1));
        expect(summary).toEqual(v1.summary);
      }),
      { numRuns: 500 },
    );
  });

  it('is the same document when units are answered in any order (each rendered as it is answered)', () => {
    fc.assert(
      fc.property(
        inputRows(12, 80),
        fc.integer({ min: 1, max: 25 }),
        fc.array(fc.nat(), { maxLength: 6 }),
        fc.integer(),
        (rows, unitSize, cuts, seed) => {
          const phones = rows.map(([p]) => p);
          const outcomes = rows.map(([, o]) => o);
          const elements = elementsOf(phones, cuts);
          const builder = new ResultBuilder(phones.length);
          const starts = Array.from({ length: Math.ceil(phones.length / unitSize) }, (_, k) => k * unitSize);
          // A shuffle of the units: the order in which their answers came back.
          starts.sort((a, b) => ((a * 7919 + seed) % 97) - ((b * 7919 + seed) % 97));
          for (const from of starts)
            builder.add(from, elements.slice(from, from + unitSize), outcomes.slice(from, from + unitSize));
          expect(textOf(builder.document()).text).toBe(JSON.stringify(buildScrubResult(phones, outcomes)));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('refuses a document with an input not answered, or answered twice', () => {
    const builder = new ResultBuilder(4);
    builder.add(0, elementsOf(['a', 'b']), [Outcome.SAFE, Outcome.SAFE]);
    expect(() => builder.document().next()).toThrow('outcome count differs from input count');
    expect(() => builder.add(0, elementsOf(['a', 'b']), [Outcome.SAFE, Outcome.SAFE])).toThrow(
      'answered twice',
    );
    expect(() => builder.add(3, elementsOf(['c', 'd']), [Outcome.SAFE, Outcome.SAFE])).toThrow(
      'outside the input',
    );
    // Inputs 1-2 answered again and 3 never: the count adds up, the coverage does not.
    const gaps = new ResultBuilder(4);
    gaps.add(0, elementsOf(['a', 'b']), [Outcome.SAFE, Outcome.SAFE]);
    gaps.add(1, elementsOf(['b', 'c']), [Outcome.SAFE, Outcome.SAFE]);
    expect(() => gaps.document().next()).toThrow('outcome count differs from input count');
    expect(() => new ResultBuilder(1).add(0, elementsOf(['a']), [Outcome.UNSPECIFIED])).toThrow(
      IncompleteAnswerError,
    );
  });

  it('an empty job has an empty, complete result', () => {
    expect(render([], []).doc.summary).toEqual({
      total_checked: 0,
      prohibited_numbers: 0,
      safe_numbers: 0,
      invalid_numbers: 0,
    });
  });

  it('never classifies an unspecified outcome: the answer is refused, not guessed as safe', () => {
    expect(() => render(['1'], [Outcome.UNSPECIFIED])).toThrow(IncompleteAnswerError);
    expect(() => render(['1', '2'], [Outcome.SAFE])).toThrow(/count/);
  });
});

describe('internal-to-public failure mapping', () => {
  it('maintenance is final at once; unavailable and deadline are retried; both map to the spec vocabulary', () => {
    const m = classifyAdapterError(
      publicError(Code.Unavailable, 'country_service_maintenance', { retryAfterSeconds: 60 }),
    );
    expect(m.retryable).toBe(false);
    expect(publicJobError(m.cause)).toBe('country_service_maintenance');
    const u = classifyAdapterError(new ConnectError('down', Code.Unavailable));
    expect(u.retryable).toBe(true);
    expect(publicJobError(u.cause)).toBe('country_service_temporarily_unavailable');
    expect(classifyAdapterError(new ConnectError('slow', Code.DeadlineExceeded)).retryable).toBe(true);
    expect(publicJobError({ kind: 'inconclusive' })).toBe('country_service_temporarily_unavailable');
    expect(publicJobError({ kind: 'platform' })).toBe('platform_failure');
  });

  it('backoff grows exponentially, is jittered, and is capped', () => {
    expect(backoffMs(0, 200, 5000, () => 0)).toBe(100);
    expect(backoffMs(0, 200, 5000, () => 1)).toBe(200);
    expect(backoffMs(3, 200, 5000, () => 1)).toBe(1600);
    expect(backoffMs(20, 200, 5000, () => 1)).toBe(5000);
  });
});
