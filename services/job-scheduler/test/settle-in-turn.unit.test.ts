import { describe, expect, it } from 'vitest';
import { type SettleTurnPort, settleInTurn, UNANSWERED_PER_TICK } from '../src/settle-in-turn.js';
import type { SettleOutcome } from '../src/settlement.js';
import type { JobRow } from '../src/store/jobs.js';

// Who waits after a failed quota settlement (the sweeper's retries), as decided by the next tries. Each job
// is named `<org><n>` (A1, A2: two jobs of organization A's mx account); the list is oldest first.

const job = (name: string) => ({ id: name, orgId: name[0]!, country: 'mx' }) as unknown as JobRow;

function run(
  names: string[],
  outcomes: Record<string, SettleOutcome>,
  opts: { waits?: Record<string, boolean>; budget?: number; turnFor?: number; callMs?: number } = {},
) {
  const calls: string[] = [];
  const held: number[] = [];
  let turns = 0;
  const port: SettleTurnPort = {
    keepTurn: async () => turns++ < (opts.turnFor ?? Number.POSITIVE_INFINITY),
    settle: async (j) => {
      calls.push(`try ${j.id}`);
      const outcome = outcomes[j.id] ?? 'settled';
      // An unanswered call that hangs for its deadline.
      if (outcome === 'unanswered' && opts.callMs) await new Promise((r) => setTimeout(r, opts.callMs));
      return outcome;
    },
    waitJob: async (j) => void calls.push(`job waits ${j.id}`),
    waitAccount: async (j) => void calls.push(`account waits ${j.orgId}`),
    hold: async (j, spentMs) => {
      calls.push(`account held ${j.orgId}`);
      held.push(spentMs);
    },
    answeredAccount: async (j) => void calls.push(`account answered ${j.orgId}`),
  };
  const waits = new Map(Object.entries(opts.waits ?? {}).map(([org, waiting]) => [`${org}/mx`, { waiting }]));
  return settleInTurn(names.map(job), waits, opts.budget ?? UNANSWERED_PER_TICK, port).then((left) =>
    opts.callMs ? { left, calls, held } : { left, calls },
  );
}

describe('settleInTurn', () => {
  it('quota answering nothing: two accounts tried, held a short while, no count, and the sweep stops', async () => {
    const down = { A1: 'unanswered', B1: 'unanswered', C1: 'unanswered' } as const;
    expect(await run(['A1', 'B1', 'C1'], down)).toEqual({
      left: 0,
      calls: ['try A1', 'try B1', 'account held A', 'account held B'],
    });
    // Two jobs of one account, nothing else: held likewise.
    expect(await run(['A1', 'A2'], { A1: 'unanswered', A2: 'unanswered' })).toEqual({
      left: UNANSWERED_PER_TICK - 2,
      calls: ['try A1', 'try A2', 'account held A', 'account held A'],
    });
    // One job alone, nothing answered: held, not blamed, and the sweep's other settlements go on.
    expect(await run(['A1'], down)).toEqual({
      left: UNANSWERED_PER_TICK - 1,
      calls: ['try A1', 'account held A'],
    });
  });

  it('calls that hang: the hold is longer by what they took', async () => {
    const { held } = (await run(['A1', 'B1'], { A1: 'unanswered', B1: 'unanswered' }, { callMs: 60 })) as {
      held: number[];
    };
    expect(held).toHaveLength(2);
    for (const ms of held) expect(ms).toBeGreaterThanOrEqual(110);
  });

  it('the sweeps’ turn lost: nothing more is tried', async () => {
    expect(await run(['A1', 'B1', 'C1'], {}, { turnFor: 2 })).toEqual({
      left: 0,
      calls: ['try A1', 'try B1'],
    });
  });

  it('a job quota refused waits alone, and its account goes on', async () => {
    expect(await run(['A1', 'A2', 'B1'], { A1: 'refused' })).toEqual({
      left: UNANSWERED_PER_TICK,
      calls: ['try A1', 'job waits A1', 'try A2', 'try B1'],
    });
  });

  it('an unanswered job whose account’s next job settles waits alone; the next of its account is tried first', async () => {
    expect(await run(['A1', 'B1', 'A2', 'C1'], { A1: 'unanswered' })).toEqual({
      left: UNANSWERED_PER_TICK - 1,
      calls: ['try A1', 'try A2', 'job waits A1', 'try B1', 'try C1'],
    });
  });

  it('an account whose two jobs go unanswered while another account’s settles waits, and so do both jobs', async () => {
    expect(await run(['A1', 'A2', 'A3', 'B1', 'C1'], { A1: 'unanswered', A2: 'unanswered' })).toEqual({
      left: UNANSWERED_PER_TICK - 2,
      calls: ['try A1', 'try A2', 'try B1', 'job waits A1', 'job waits A2', 'account waits A', 'try C1'],
    });
  });

  it('a refusal while an unanswered job waits for its explanation: the refused one waits alone, the probe goes on', async () => {
    expect(await run(['A1', 'A2', 'A3', 'B1'], { A1: 'unanswered', A2: 'refused' })).toEqual({
      left: UNANSWERED_PER_TICK - 1,
      calls: ['try A1', 'try A2', 'job waits A2', 'try A3', 'job waits A1', 'try B1'],
    });
  });

  it('a lone unanswered job after quota answered another: that job waits, no account', async () => {
    expect(await run(['B1', 'A1'], { A1: 'unanswered' })).toEqual({
      left: UNANSWERED_PER_TICK - 1,
      calls: ['try B1', 'try A1', 'job waits A1'],
    });
    expect(await run(['B1', 'A1'], { A1: 'unanswered', B1: 'refused' })).toEqual({
      left: UNANSWERED_PER_TICK - 1,
      calls: ['try B1', 'job waits B1', 'try A1', 'job waits A1'],
    });
  });

  it('the sweep’s budget of unanswered calls spent: the last one’s account is held and the sweep stops', async () => {
    const some = { A1: 'unanswered', C1: 'unanswered', E1: 'unanswered' } as const;
    expect(await run(['A1', 'B1', 'C1', 'D1', 'E1', 'F1'], some)).toEqual({
      left: 0,
      calls: [
        'try A1',
        'try B1',
        'job waits A1',
        'try C1',
        'try D1',
        'job waits C1',
        'try E1',
        'account held E',
      ],
    });
    // A budget spent by an earlier step of the same sweep carries over.
    expect(await run(['A1', 'B1'], { A1: 'unanswered' }, { budget: 1 })).toEqual({
      left: 0,
      calls: ['try A1', 'account held A'],
    });
  });

  it('passes over the accounts whose wait lasts; a wait that is over ends with the account’s first settlement', async () => {
    expect(await run(['A1', 'B1', 'B2', 'C1'], {}, { waits: { A: true, B: false } })).toEqual({
      left: UNANSWERED_PER_TICK,
      calls: ['try B1', 'account answered B', 'try B2', 'try C1'],
    });
  });
});
