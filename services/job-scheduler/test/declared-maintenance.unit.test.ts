import type { KV, Logger } from '@dnc/kit';
import { describe, expect, it } from 'vitest';
import { DeclaredMaintenance } from '../src/worker/declared-maintenance.js';

const silent = { warn: () => {} } as unknown as Logger;
const entry = (until: string | null) => ({
  operation: 'PUT',
  json: () => ({ country: 'mx', maintenance_until: until }),
});

/** A KV bucket whose reads are counted, answered by `answer` (a never-settling promise: NATS away). */
function bucket(answer: () => Promise<unknown>) {
  const kv = {
    reads: 0,
    get: async () => {
      kv.reads++;
      return answer();
    },
  };
  return kv as typeof kv & Pick<KV, 'get'>;
}

describe('DeclaredMaintenance (the worker reads the windows operators declare)', () => {
  it('reads a window, and reads again 2 s later, not on every call', async () => {
    let clock = 1_000_000;
    const until = new Date(clock + 60_000).toISOString();
    const kv = bucket(async () => entry(until));
    const declared = new DeclaredMaintenance(kv, silent, () => clock);
    expect(await declared.until('mx')).toBe(clock + 60_000);
    clock += 1_999;
    expect(await declared.until('mx')).toBe(Date.parse(until));
    expect(kv.reads).toBe(1);
    clock += 1;
    await declared.until('mx');
    expect(kv.reads).toBe(2);
  });

  // Found by a review (2026-12-03): while NATS was away every adapter call of every unit waited for the
  // KV read's request timeout (seconds), and every concurrent caller sent a read of its own.
  it('while the bucket does not answer: each call waits at most the read bound, one read at a time, the last window stands', async () => {
    let clock = 1_000_000;
    const until = clock + 600_000;
    let away = false;
    const kv = bucket(() =>
      away ? new Promise(() => {}) : Promise.resolve(entry(new Date(until).toISOString())),
    );
    const declared = new DeclaredMaintenance(kv, silent, () => clock, 100);
    expect(await declared.until('mx')).toBe(until);
    away = true;
    clock += 2_000;
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: 20 }, () => declared.until('mx')));
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(answers).toEqual(Array(20).fill(until)); // the last window read stands
    expect(kv.reads).toBe(2); // one read for the twenty callers
    // And the next read is 2 s later, not at the next call.
    const again = performance.now();
    expect(await declared.until('mx')).toBe(until);
    expect(performance.now() - again).toBeLessThan(50);
    expect(kv.reads).toBe(2);
  });
});
