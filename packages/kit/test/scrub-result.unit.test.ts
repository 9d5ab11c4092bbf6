import { INVALID_REASONS } from '@dnc/api-contract/limits';
import { registryv1 } from '@dnc/proto';
import { describe, expect, it } from 'vitest';
import { buildScrubResult, IncompleteAnswerError, OUTCOME_REASONS, reasonOf } from '../src/scrub-result.js';

const { Outcome } = registryv1;

describe('public reasons of invalid outcomes (spec: invalid_numbers[].reason)', () => {
  it('maps every invalid outcome to its reason, and every documented reason has its outcome', () => {
    expect(Object.fromEntries(OUTCOME_REASONS)).toEqual({
      [Outcome.INVALID_UNPARSEABLE]: 'unparseable',
      [Outcome.INVALID_LENGTH]: 'invalid_length',
      [Outcome.INVALID_NUMBER]: 'invalid_number',
      [Outcome.INVALID_WRONG_COUNTRY]: 'wrong_country',
      [Outcome.INVALID_OBSOLETE_FORMAT]: 'obsolete_format',
      [Outcome.INVALID_REGISTRY_REJECTED]: 'registry_rejected',
    });
    expect([...OUTCOME_REASONS.values()].sort()).toEqual([...INVALID_REASONS].sort());
  });

  it('gives no reason for safe, prohibited and unspecified', () => {
    expect(reasonOf(Outcome.SAFE)).toBeUndefined();
    expect(reasonOf(Outcome.PROHIBITED)).toBeUndefined();
    expect(reasonOf(Outcome.UNSPECIFIED)).toBeUndefined();
  });
});

describe('buildScrubResult (spec: ScrubResult invariants)', () => {
  it('keeps the original inputs, their relative order and duplicates, and counts every element', () => {
    const phones = ['+52 55 1234 5678', 'abc', '5512345678', '+52 55 1234 5678', '', '(55) 9999-0000'];
    const outcomes = [
      Outcome.PROHIBITED,
      Outcome.INVALID_UNPARSEABLE,
      Outcome.SAFE,
      Outcome.PROHIBITED,
      Outcome.INVALID_UNPARSEABLE,
      Outcome.INVALID_LENGTH,
    ];
    const r = buildScrubResult(phones, outcomes);
    expect(r.prohibited_numbers_to_call).toEqual(['+52 55 1234 5678', '+52 55 1234 5678']);
    expect(r.safe_numbers_to_call).toEqual(['5512345678']);
    expect(r.invalid_numbers).toEqual([
      { input: 'abc', reason: 'unparseable' },
      { input: '', reason: 'unparseable' },
      { input: '(55) 9999-0000', reason: 'invalid_length' },
    ]);
    expect(r.summary).toEqual({
      total_checked: 6,
      prohibited_numbers: 2,
      safe_numbers: 1,
      invalid_numbers: 3,
    });
    const s = r.summary;
    expect(s.prohibited_numbers + s.safe_numbers + s.invalid_numbers).toBe(s.total_checked);
    for (const forbidden of ['matched', 'clean', 'invalid', 'stats']) expect(r).not.toHaveProperty(forbidden);
  });

  it('empty input gives zero counts', () => {
    expect(buildScrubResult([], []).summary).toEqual({
      total_checked: 0,
      prohibited_numbers: 0,
      safe_numbers: 0,
      invalid_numbers: 0,
    });
  });

  it('never turns a short answer or an unknown outcome into safe', () => {
    expect(() => buildScrubResult(['1', '2'], [Outcome.SAFE])).toThrow(IncompleteAnswerError);
    expect(() => buildScrubResult(['1'], [Outcome.UNSPECIFIED])).toThrow(IncompleteAnswerError);
    expect(() => buildScrubResult(['1'], [99])).toThrow(IncompleteAnswerError);
  });
});
