import { inTransaction, type Pool, type PoolClient } from '@dnc/kit';

/**
 * Runs `work` in one transaction of the dashboard's database. A change of the dashboard's own data and
 * the audit row that records it are written in one such transaction (each store's change and
 * `AuditLog.record` take it as `tx`): both are committed or neither, so no change is left without its
 * row (a compliance requirement).
 */
export type Transaction = <T>(work: (tx: PoolClient) => Promise<T>) => Promise<T>;

/** `work` in the caller's transaction `tx` when there is one, else in a transaction of its own. */
export function within<T>(
  pool: Pool,
  tx: PoolClient | undefined,
  work: (tx: PoolClient) => Promise<T>,
): Promise<T> {
  return tx ? work(tx) : inTransaction(pool, work);
}
