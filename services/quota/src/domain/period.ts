/** The quota period of an instant: its UTC calendar month, `YYYY-MM`. */
export function periodOf(at: Date): string {
  const month = String(at.getUTCMonth() + 1).padStart(2, '0');
  return `${at.getUTCFullYear()}-${month}`;
}

/*
 * The invariant of an account, `used + reserved <= limit`, lives in SQL only: `quota.reserve_many`
 * (migrations/1763790000000_quota-batches.sql) refuses a reservation that would break it, whole, under
 * the account's lock (test/batch.int.test.ts provokes it at the limit and one past it).
 */

/** Reservation state machine: reserved -> committed | released; both terminal. */
export type ReservationState = 'reserved' | 'committed' | 'released';

export type LedgerStep = 'commit' | 'release';

/**
 * What a commit or release does to a reservation in `state`. Repeating a step is a no-op (each step is
 * idempotent by reservation id); committing a released reservation is refused, releasing a committed
 * one changes nothing (usage already recorded stays recorded). Release applies it here; commit in SQL,
 * in `quota.commit_many` (migrations).
 */
export function transition(state: ReservationState, step: LedgerStep): 'apply' | 'noop' | 'refuse' {
  if (state === 'reserved') return 'apply';
  if (step === 'commit') return state === 'committed' ? 'noop' : 'refuse';
  return 'noop';
}
