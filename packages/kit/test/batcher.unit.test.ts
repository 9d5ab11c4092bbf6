import { describe, expect, it } from 'vitest';
import { Batcher } from '../src/batcher.js';

function deferred<T>() {
  let resolve!: (v?: T) => void;
  const promise = new Promise<T | undefined>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('Batcher', () => {
  it('sends a lone item at once and batches what arrives while a flush is in flight', async () => {
    const batches: number[][] = [];
    const gates: { resolve: () => void }[] = [];
    const batcher = new Batcher<number, number>(
      async (items) => {
        batches.push(items);
        const gate = deferred<undefined>();
        gates.push(gate);
        await gate.promise;
        return items.map((i) => i * 10);
      },
      { maxBatch: 3, maxInFlight: 1 },
    );
    const first = batcher.submit(1);
    expect(batches).toEqual([[1]]); // no wait for company
    const rest = [2, 3, 4, 5].map((i) => batcher.submit(i));
    expect(batcher.waiting).toBe(4);
    gates[0]!.resolve();
    expect(await first).toBe(10);
    await Promise.resolve();
    expect(batches[1]).toEqual([2, 3, 4]); // at most maxBatch
    gates[1]!.resolve();
    await new Promise((r) => setImmediate(r));
    expect(batches[2]).toEqual([5]);
    gates[2]!.resolve();
    expect(await Promise.all(rest)).toEqual([20, 30, 40, 50]);
  });

  it('fails only the items whose result is an Error, and every item of a rejected flush', async () => {
    const batcher = new Batcher<number, number>(
      async (items) => {
        if (items.includes(13)) throw new Error('flush failed');
        return items.map((i) => (i % 2 ? new Error(`odd ${i}`) : i));
      },
      { maxBatch: 10, maxInFlight: 1 },
    );
    // 2 goes alone; 3 and 4 share the next flush, where only 3 fails.
    const mixed = await Promise.allSettled([2, 3, 4].map((i) => batcher.submit(i)));
    expect(mixed.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    // 6 goes alone; 13 and 8 share a flush that throws: both fail.
    const thrown = await Promise.allSettled([6, 13, 8].map((i) => batcher.submit(i)));
    expect(thrown.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
  });

  it('runs up to maxInFlight flushes at once', async () => {
    let concurrent = 0;
    let peak = 0;
    const batcher = new Batcher<number, number>(
      async (items) => {
        concurrent++;
        peak = Math.max(peak, concurrent);
        await new Promise((r) => setTimeout(r, 5));
        concurrent--;
        return items;
      },
      { maxBatch: 1, maxInFlight: 2 },
    );
    await Promise.all([1, 2, 3, 4, 5].map((i) => batcher.submit(i)));
    expect(peak).toBe(2);
  });

  it('rejects a run that returns the wrong number of results', async () => {
    const batcher = new Batcher<number, number>(async () => [], { maxBatch: 5, maxInFlight: 1 });
    await expect(batcher.submit(1)).rejects.toThrow('wrong number');
  });
});

describe('Batcher with sameTurn', () => {
  it('flushes everything submitted in one turn of the event loop together', async () => {
    const batches: number[][] = [];
    const batcher = new Batcher<number, number>(
      async (items) => {
        batches.push(items);
        return items;
      },
      { maxBatch: 10, maxInFlight: 1, sameTurn: true },
    );
    const all = Promise.all([1, 2, 3].map((i) => batcher.submit(i)));
    expect(batches).toEqual([]);
    expect(await all).toEqual([1, 2, 3]);
    expect(batches).toEqual([[1, 2, 3]]);
  });
});
