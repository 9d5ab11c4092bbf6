import { describe, expect, it } from 'vitest';
import {
  defaultMemoryBudget,
  jobMemoryCost,
  MemoryBudget,
  PARSE_RESERVE_BYTES,
} from '../src/worker/memory.js';

const MiB = 1024 * 1024;

describe('MemoryBudget', () => {
  it('admits in order while jobs fit; a job that does not fit waits for a release', async () => {
    const budget = new MemoryBudget(100 * MiB);
    const signal = new AbortController().signal;
    const a = await budget.admit(60 * MiB, signal);
    let bAdmitted = false;
    const b = budget.admit(60 * MiB, signal).then((r) => {
      bAdmitted = true;
      return r;
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(bAdmitted).toBe(false);
    expect(budget.inUse).toBe(60 * MiB);
    a();
    const releaseB = await b;
    expect(budget.inUse).toBe(60 * MiB);
    releaseB();
    releaseB();
    expect(budget.inUse).toBe(0);
  });

  it('a job larger than the whole budget runs alone, and a waiting job can be given up', async () => {
    const budget = new MemoryBudget(100 * MiB);
    const big = await budget.admit(500 * MiB, new AbortController().signal);
    expect(budget.inUse).toBe(100 * MiB);
    const stop = new AbortController();
    const waiting = budget.admit(1 * MiB, stop.signal);
    stop.abort(new Error('shutdown'));
    await expect(waiting).rejects.toThrow('shutdown');
    big();
    expect(budget.inUse).toBe(0);
  });

  it('the estimate of the largest admissible job: six fit the default budget of the chart heap (384 MiB)', () => {
    const largest = jobMemoryCost(22_000_000, 451_000);
    const chartBudget = 384 * MiB + 48 * MiB - PARSE_RESERVE_BYTES; // heap_size_limit: old space + 48 MiB young
    expect(Math.floor(chartBudget / largest)).toBeGreaterThanOrEqual(6);
    expect(Math.floor((256 * MiB + 48 * MiB - PARSE_RESERVE_BYTES) / largest)).toBeLessThan(6);
    // An ordinary job (10,000 numbers of 12 characters) costs about 2.5 MiB.
    expect(jobMemoryCost(150_000, 10_000)).toBeLessThan(3 * MiB);
    expect(defaultMemoryBudget()).toBeGreaterThanOrEqual(64 * MiB);
  });
});
