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
  opts: { waits?: Record<string, boolean>; budget?: number } = {},
) {
  const calls: string[] = [];
  const port: SettleTurnPort = {
    settle: async (j) => {
      calls.push(`try ${j.id}`);
      return outcomes[j.id] ?? 'settled';
    },
    waitJob: async (j) => void calls.push(`job waits ${j.id}`),
    waitAccount: async (j) => void calls.push(`account waits ${j.orgId}`),
    hold: async (j) => void calls.push(`account held ${j.orgId}`),
    answeredAccount: async (j) => void calls.push(`account answered ${j.orgId}`),
  };
  const waits = new Map(Object.entries(opts.waits ?? {}).map(([org, waiting]) => [`${org}/mx`, { waiting }]));
  return settleInTurn(names.map(job), waits, opts.budget ?? UNANSWERED_PER_TICK, port).then((left) => ({
    left,
    calls,
  }));
}

describe('settleInTurn', () => {
  it('quota answering nothing: two accounts tried, held a short while, no count, and the sweep stops', async () => {
    const down = { A1: 'unanswered', B1: 'unanswered', C1: 'unanswered' } as const;
    expect(await run(['A1', 'B1', 'C1'], down)).toEqual({
      left: 0,
      calls: ['try A1', 'try B1', 'account held A', 'account held B'],
    });
    // One job alone, nothing answered: held, not blamed.
    expect(await run(['A1'], down)).toEqual({ left: 0, calls: ['try A1', 'account held A'] });
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
