import type { ScrubResult } from '@dnc-scrub/sdk';

export const STATUS_NAMES = ['prohibited', 'safe', 'invalid'] as const;
export type StatusName = (typeof STATUS_NAMES)[number];

/** The outcome of every input, by position: a status index into STATUS_NAMES, and the reason of invalid ones. */
export interface Outcomes {
  status: Uint8Array;
  reasons: Map<number, string>;
}

/** The result does not fit the numbers that were sent (a different file, or not the job that was submitted). */
export class ResultMismatchError extends Error {
  override readonly name = 'ResultMismatchError';
}

/**
 * Puts each input back in its place. The service keeps the original inputs, in input order, within each of the
 * three lists, so one walk over the inputs with a cursor per list finds every outcome (duplicates included).
 */
export function outcomesByPosition(phones: readonly string[], result: ScrubResult): Outcomes {
  const {
    prohibited_numbers_to_call: prohibited,
    safe_numbers_to_call: safe,
    invalid_numbers: invalid,
  } = result;
  if (result.summary.total_checked !== phones.length) {
    throw new ResultMismatchError(
      `the result covers ${result.summary.total_checked} inputs, the file holds ${phones.length}`,
    );
  }
  const status = new Uint8Array(phones.length);
  const reasons = new Map<number, string>();
  let p = 0;
  let s = 0;
  let v = 0;
  for (let i = 0; i < phones.length; i++) {
    const phone = phones[i];
    if (p < prohibited.length && prohibited[p] === phone) {
      status[i] = 0;
      p++;
    } else if (s < safe.length && safe[s] === phone) {
      status[i] = 1;
      s++;
    } else if (v < invalid.length && invalid[v]?.input === phone) {
      status[i] = 2;
      reasons.set(i, invalid[v]?.reason as string);
      v++;
    } else {
      throw new ResultMismatchError(`input ${i + 1} of the file is not where the result has it`);
    }
  }
  if (p !== prohibited.length || s !== safe.length || v !== invalid.length) {
    throw new ResultMismatchError('the result holds inputs the file does not');
  }
  return { status, reasons };
}
