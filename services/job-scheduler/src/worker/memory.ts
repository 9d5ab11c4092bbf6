import { getHeapStatistics } from 'node:v8';

const MiB = 1024 * 1024;

/**
 * The memory a running job holds, in V8's heap and outside it. Its phones are its input's own bytes
 * (domain/input-elements.ts: the decrypted segments, outside the heap, and 4 bytes per phone saying where
 * each starts), not strings; each unit's share of the result is rendered into bytes as the unit is
 * answered (domain/result.ts), and a piece of the input is dropped once every phone in it is rendered,
 * so the input's bytes give way to the result's. The heap holds a few objects per piece. A segment being
 * read lives one synchronous step (PARSE_RESERVE keeps that peak out of the budget). Measured in one
 * process, 50,000-phone units, input and result together at their peak (heap and outside, after a
 * collection): 500,000 inputs of 1 / 11 characters all invalid 20.5 / 24.6 MB (estimated 24.1 / 29.1 MB),
 * 13 / 49 characters all safe 14.8 / 31.3 MB (30.1 / 48.1 MB), 451,000 of 49 characters all safe
 * 28.7 MB (43.6 MB; all invalid, a result above the 25 MiB admission allows, 42.1 MB). With the
 * chart's 1 GiB limit and a 432 MiB heap, the 304 MiB budget below holds six of the largest jobs.
 */
export function jobMemoryCost(inputBytes: number, inputCount: number): number {
  return inputBytes + 40 * inputCount + 2 * MiB;
}

/**
 * Memory kept out of the job budget: the process itself (~40 MiB) and a segment being read (since the
 * phones stay bytes, the segment, its carry-over and where its elements start: a few MiB). Sized when
 * a whole input was parsed into strings at once (its text and array, ~60 MB) and kept at that: an upper
 * bound, with room for the garbage collector.
 */
export const PARSE_RESERVE_BYTES = 128 * MiB;

/**
 * The default budget: the heap limit (--max-old-space-size) less PARSE_RESERVE_BYTES, at least 64 MiB.
 * With the chart's 384 MiB heap (a heap limit of 432 MiB) that is 304 MiB: six of the largest-heap jobs
 * (2 per country x 3).
 */
export function defaultMemoryBudget(): number {
  return Math.max(64 * MiB, getHeapStatistics().heap_size_limit - PARSE_RESERVE_BYTES);
}

/**
 * Admits jobs against a budget of bytes, first come first served. A job that does not fit waits (it
 * has not been claimed, so it burns no attempt); one larger than the whole budget runs alone.
 */
export class MemoryBudget {
  private used = 0;
  private readonly waiting: { cost: number; grant: () => void }[] = [];

  constructor(readonly budget: number) {}

  get inUse(): number {
    return this.used;
  }

  /** Resolves with a release function once `cost` fits; rejects if `signal` aborts first. */
  admit(cost: number, signal: AbortSignal): Promise<() => void> {
    const need = Math.min(cost, this.budget);
    return new Promise((resolve, reject) => {
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        this.used -= need;
        this.drain();
      };
      const entry = {
        cost: need,
        grant: () => {
          signal.removeEventListener('abort', onAbort);
          this.used += need;
          resolve(release);
        },
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(entry);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal.reason);
        this.drain();
      };
      if (signal.aborted) return reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(entry);
      this.drain();
    });
  }

  private drain(): void {
    while (this.waiting.length > 0) {
      const head = this.waiting[0]!;
      if (this.used > 0 && this.used + head.cost > this.budget) return;
      this.waiting.shift();
      head.grant();
    }
  }
}
