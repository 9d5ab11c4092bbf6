import { getHeapStatistics } from 'node:v8';

const MiB = 1024 * 1024;

/**
 * The V8 heap a running job holds: the array of its phones (an 8-byte slot and a string of its
 * characters plus ~24 bytes of header and padding each). The decrypted input is parsed a segment at a
 * time as it is read (worker/input.ts): a segment and its text (~2 MiB) live only while they are
 * parsed, one synchronous step, and are dropped then: that transient peak is kept out of the budget
 * (PARSE_RESERVE, sized when the whole input was parsed at once, so still an upper bound). Measured for the
 * admissible job that costs the most heap (500,000 inputs of 49 characters, 26.0 MB of JSON): ~40 MB
 * held; the estimate gives 26 MB + 40 x 500,000 + 2 MiB = 48 MB. (451,000 inputs / 22 MB, a result of
 * exactly 25 MiB: ~28 MB held, 42 MB estimated.) The result is rendered unit by unit as units are
 * answered (domain/result.ts), each unit's pieces kept as UTF-8 bytes outside the heap and its phones
 * released from the input then (worker/input.ts): the heap a job holds stays within this estimate
 * (measured: 500,000 inputs of 1, 11 and 49 characters, all invalid or all safe, live heap 4.5 / 20.2 /
 * 40.4 MB against 24.1 / 29.1 / 48.1 MB estimated), and the result's bytes, at most its 25 MiB, are held
 * beside it until they are stored: six jobs at once take at most ~150 MiB more RSS, within the chart's
 * 1 GiB limit of a worker with a 432 MiB heap.
 */
export function jobMemoryCost(inputBytes: number, inputCount: number): number {
  return inputBytes + 40 * inputCount + 2 * MiB;
}

/**
 * Heap kept out of the job budget: the process itself (~40 MiB) and one parse at its peak (the
 * largest input's text and array at once, ~60 MB), with room for the garbage collector.
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
