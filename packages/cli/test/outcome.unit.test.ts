import { describe, expect, it } from 'vitest';
import { outcomesByPosition, ResultMismatchError } from '../src/index.js';

const summary = (p: number, s: number, i: number) => ({
  total_checked: p + s + i,
  prohibited_numbers: p,
  safe_numbers: s,
  invalid_numbers: i,
});

describe('outcomesByPosition', () => {
  it('puts every input back in its place, duplicates and interleavings included', () => {
    const phones = ['300', 'x', '310', '300', 'x', '320', '300'];
    const outcomes = outcomesByPosition(phones, {
      prohibited_numbers_to_call: ['300', '300', '300'],
      safe_numbers_to_call: ['310', '320'],
      invalid_numbers: [
        { input: 'x', reason: 'unparseable' },
        { input: 'x', reason: 'unparseable' },
      ],
      summary: summary(3, 2, 2),
    });
    expect([...outcomes.status]).toEqual([0, 2, 1, 0, 2, 1, 0]);
    expect([...outcomes.reasons]).toEqual([
      [1, 'unparseable'],
      [4, 'unparseable'],
    ]);
  });

  it('refuses a result that is not of these inputs', () => {
    const result = {
      prohibited_numbers_to_call: ['300'],
      safe_numbers_to_call: [],
      invalid_numbers: [],
      summary: summary(1, 0, 0),
    };
    expect(() => outcomesByPosition(['300', '310'], result)).toThrow(/covers 1 inputs, the file holds 2/);
    expect(() => outcomesByPosition(['310'], result)).toThrow(ResultMismatchError);
    expect(() =>
      outcomesByPosition(['300'], { ...result, safe_numbers_to_call: ['9'], summary: summary(1, 0, 0) }),
    ).toThrow(/holds inputs the file does not/);
  });
});
