import type { ScrubResult } from '@dnc-scrub/sdk';

export const STATUS_NAMES = ['prohibited', 'safe', 'invalid'] as const;
export type StatusName = (typeof STATUS_NAMES)[number];

/** The outcome of every input, by position: a status index into STATUS_NAMES, and the reason of invalid ones. */
export interface Outcomes {
  status: Uint8Array;
  reasons: Map<number, string>;
  /** Numbers the result has both prohibited and safe (a registry update during a v2 job): all shown prohibited. */
  answeredBoth: number;
}

/** The result does not fit the numbers that were sent (a different file, or not the job that was submitted). */
export class ResultMismatchError extends Error {
  override readonly name = 'ResultMismatchError';
}

/**
 * Puts each input back in its place. The service keeps the original inputs, in input order, within each of the
 * three lists, so one walk over the inputs with a cursor per list finds every outcome (duplicates included).
 *
 * One string can be in two lists: a v2 job's units are answered from the registry as it is when each is
 * checked, so a number registered (or removed) during the job is answered both ways. Taking the first list
 * whose next input matches could then misplace an outcome or refuse a true result (found by a review,
 * 2026-12-05): the walk goes back to the last such choice when it cannot go on. Where the lists allow several
 * placements, a prohibited outcome goes to the earlier row. `answeredBoth` counts such numbers.
 *
 * Every row whose input is the same string as one the result lists prohibited is then answered prohibited,
 * whatever list its own place came from: a row of such a number was answered `safe`, with a warning only
 * (found by a review, 2026-12-05), and calling a registered number is the legal risk; not calling a free one
 * is not. Inputs are compared as written: another spelling of the number is another input, answered on its own.
 *
 * Going back is bounded (a few steps per input): long runs of one number answered both ways could take it
 * time and memory growing with the square of the run. Past the bound, each number answered both ways has
 * its outcomes given to its rows by count, prohibited first (`placeByCount`), and every other input is
 * placed as before: which of a number's rows got which outcome is then not read from the lists' order.
 */
export function outcomesByPosition(phones: readonly string[], result: ScrubResult): Outcomes {
  const lists = [
    result.prohibited_numbers_to_call,
    result.safe_numbers_to_call,
    result.invalid_numbers.map((entry) => entry.input),
  ] as const;
  if (result.summary.total_checked !== phones.length) {
    throw new ResultMismatchError(
      `the result covers ${result.summary.total_checked} inputs, the file holds ${phones.length}`,
    );
  }
  if (lists[0].length + lists[1].length + lists[2].length !== phones.length) {
    throw new ResultMismatchError('the result holds inputs the file does not');
  }
  const status = placeAll(phones, lists) ?? placeByCount(phones, lists);
  const reasons = new Map<number, string>();
  let v = 0;
  for (let i = 0; i < phones.length; i++)
    if (status[i] === 2) reasons.set(i, result.invalid_numbers[v++]?.reason as string);
  const prohibited = new Set(lists[0]);
  for (let i = 0; i < phones.length; i++) if (status[i] === 1 && prohibited.has(phones[i]!)) status[i] = 0;
  return { status, reasons, answeredBoth: answeredBoth(result, prohibited) };
}

/** How many numbers the result lists both prohibited and safe (none should be called). */
export function answeredBoth(
  result: ScrubResult,
  prohibited: ReadonlySet<string> = new Set(result.prohibited_numbers_to_call),
): number {
  return new Set(result.safe_numbers_to_call.filter((phone) => prohibited.has(phone))).size;
}

/**
 * The list of each input, by a walk that goes back to its last choice at a dead end (memoized); undefined
 * when that took more than its bound of steps.
 */
function placeAll(phones: readonly string[], lists: readonly (readonly string[])[]): Uint8Array | undefined {
  const n = phones.length;
  let steps = 8 * n + 100_000;
  const status = new Uint8Array(n);
  const tried = new Uint8Array(n);
  const cursor = [0, 0, 0];
  const deadEnds = new Set<string>();
  const state = (i: number) => `${i},${cursor[0]},${cursor[1]}`;
  let i = 0;
  let furthest = 0;
  while (i < n) {
    if (--steps < 0) return undefined;
    let placed = false;
    for (let k = tried[i]!; k < 3 && !placed; k++) {
      tried[i] = k + 1;
      if (lists[k]![cursor[k]!] !== phones[i]) continue;
      cursor[k]!++;
      if (deadEnds.has(state(i + 1))) cursor[k]!--;
      else {
        status[i] = k;
        placed = true;
      }
    }
    if (placed) {
      i++;
      furthest = Math.max(furthest, i);
      if (i < n) tried[i] = 0;
      continue;
    }
    deadEnds.add(state(i));
    if (i === 0)
      throw new ResultMismatchError(`input ${furthest + 1} of the file is not where the result has it`);
    i--;
    cursor[status[i]!]!--;
  }
  return status;
}

/**
 * Every input placed in one pass: a number in two lists gets their outcomes by count, in list order
 * (prohibited first) over its rows; any other input is the next of the one list that holds it.
 */
function placeByCount(phones: readonly string[], lists: readonly (readonly string[])[]): Uint8Array {
  const seen = lists.map((list) => new Set(list));
  const inTwo = (phone: string) => seen.filter((set) => set.has(phone)).length > 1;
  const left = new Map<string, number[]>();
  lists.forEach((list, k) => {
    for (const phone of list) {
      if (!inTwo(phone)) continue;
      const counts = left.get(phone) ?? [0, 0, 0];
      counts[k]!++;
      left.set(phone, counts);
    }
  });
  const cursor = [0, 0, 0];
  const head = (k: number) => {
    const list = lists[k]!;
    while (cursor[k]! < list.length && left.has(list[cursor[k]!]!)) cursor[k]!++;
    return list[cursor[k]!];
  };
  const status = new Uint8Array(phones.length);
  for (let i = 0; i < phones.length; i++) {
    const phone = phones[i]!;
    const counts = left.get(phone);
    const k = counts ? counts.findIndex((c) => c > 0) : [0, 1, 2].find((list) => head(list) === phone);
    if (k === undefined || k < 0)
      throw new ResultMismatchError(`input ${i + 1} of the file is not where the result has it`);
    if (counts) counts[k]!--;
    else cursor[k]!++;
    status[i] = k;
  }
  return status;
}
