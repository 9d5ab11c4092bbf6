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

  // Found by a review (2026-12-05): units of one v2 job answered from two registry snapshots answer one
  // number both ways. The first list whose next input matched was taken: an outcome was misplaced, or a
  // true result refused.
  const both = (phones: string[], prohibited: string[], safe: string[], invalid: string[] = []) =>
    outcomesByPosition(phones, {
      prohibited_numbers_to_call: prohibited,
      safe_numbers_to_call: safe,
      invalid_numbers: invalid.map((input) => ({ input, reason: 'unparseable' })),
      summary: summary(prohibited.length, safe.length, invalid.length),
    });

  it('a number answered both ways: every row placed where the lists allow, and counted', () => {
    // Safe, safe, prohibited: the only placement the lists allow (and A's safe row is then shown prohibited).
    const forced = both(['A', 'B', 'A'], ['A'], ['A', 'B']);
    expect([...forced.status]).toEqual([0, 1, 0]);
    expect(forced.answeredBoth).toBe(1);
    expect([...both(['A', 'A'], ['A'], ['A']).status]).toEqual([0, 0]);
    // A long run of one number, answered prohibited only after it: the walk goes back 2,000 rows, once,
    // and places B (safe) where it is.
    const phones = [...Array<string>(2_000).fill('A'), 'B', 'A'];
    const long = both(phones, ['A'], [...Array<string>(2_000).fill('A'), 'B']);
    expect(long.status.indexOf(1)).toBe(2_000);
    expect(long.status.filter((k) => k === 1)).toHaveLength(1);
    expect(both(['A'], ['A'], []).answeredBoth).toBe(0);
  });

  // Found by a review (2026-12-05): such a row was answered safe, with a warning only. Calling a registered
  // number is the legal risk: a number the result lists as prohibited anywhere is prohibited on every row.
  it('a number the result lists as prohibited anywhere is never answered safe, on any of its rows', () => {
    const outcomes = both(['A', 'B', 'A', 'x', 'A'], ['A'], ['A', 'B', 'A'], ['x']);
    expect([...outcomes.status]).toEqual([0, 1, 0, 2, 0]);
    expect([...outcomes.reasons]).toEqual([[3, 'unparseable']]);
    expect(outcomes.answeredBoth).toBe(1);
  });

  // The same day's review of the fix: going back had no bound, and a long run of one number answered both
  // ways took time and memory growing with the square of the run (2,000 rows: 3.3 s, 143 MB; 10,000: a
  // RangeError).
  it('long runs of one number answered both ways are placed in bounded time; a wrong file is still refused', () => {
    const n = 20_000;
    const x = Array<string>(n).fill('X');
    const result = (tail: string[]) => ({
      prohibited_numbers_to_call: x,
      safe_numbers_to_call: [...x, 'Y', ...tail],
      invalid_numbers: [],
      summary: summary(n, n + 1 + tail.length, 0),
    });
    const started = performance.now();
    const placed = outcomesByPosition([...x, 'Y', ...x], result([]));
    expect(performance.now() - started).toBeLessThan(2_000);
    // Placed by count past the bound: X's rows are all prohibited there too, only Y is safe.
    expect(placed.status.filter((k) => k === 0)).toHaveLength(2 * n);
    expect(placed.status[n]).toBe(1);
    expect(placed.answeredBoth).toBe(1);
    expect(() => outcomesByPosition([...x, 'Y', ...x, 'Z'], result(['W']))).toThrow(ResultMismatchError);
  });
});
