import { describe, expect, it } from 'vitest';
import { cpuDelta } from '../system.mjs';

// The bench's CPU accounts: a process is counted by its growth; a shared server by the growth of each of
// its processes, so that one exiting mid-phase does not subtract its whole past from the others'.
describe('cpuDelta', () => {
  it('counts a stack process by what it grew', () => {
    expect(cpuDelta({ gateway: 1.5 }, { gateway: 2.25 })).toEqual({ gateway: 0.75 });
  });

  it('sums a shared server over its processes: one that exited takes nothing away, a new one counts from 0', () => {
    const before = { postgres: { 10: 40, 11: 5, 12: 3 } };
    // 11 exited during the phase (its 5 s of the past and whatever it did since are gone from /proc),
    // 10 grew by 0.5 s, 12 by 0.25 s, 13 started and ran 0.125 s.
    const after = { postgres: { 10: 40.5, 12: 3.25, 13: 0.125 } };
    expect(cpuDelta(before, after)).toEqual({ postgres: 0.875 });
  });

  it('never turns negative when the busiest process exits (the sum of the totals did: 0 after clamping)', () => {
    expect(cpuDelta({ postgres: { 1: 100, 2: 1 } }, { postgres: { 2: 1.5 } })).toEqual({ postgres: 0.5 });
  });

  it('takes an entry that appeared since the first snapshot from 0', () => {
    expect(cpuDelta({}, { quota: 0.25, redis: { 7: 0.5 } })).toEqual({ quota: 0.25, redis: 0.5 });
  });
});
