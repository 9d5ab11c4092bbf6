import pg from 'pg';

// The statements waiting behind a session's row lock: those it blocks, and those queued behind them (a
// second waiter on a row waits on the first waiter's tuple lock, not on the holder).
const WAITERS = `WITH first AS (SELECT pid FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid)))
  SELECT ((SELECT count(*) FROM first) + (SELECT count(*) FROM pg_stat_activity
    WHERE pid NOT IN (SELECT pid FROM first) AND pg_blocking_pids(pid) && ARRAY(SELECT pid FROM first)))::int AS n`;

/**
 * A row of `databaseUrl` locked by `lock` (a `SELECT ... FOR UPDATE`) in a transaction of its own, as a
 * statement in flight holds it, until `release`; `waiters(n)` resolves once `n` statements wait behind it.
 * The waiters are read on a second connection: inside the lock's transaction, pg_stat_activity would stay
 * the snapshot first read.
 */
export async function holdRow(databaseUrl: string, lock: string, params: unknown[]) {
  const db = new pg.Client({ connectionString: databaseUrl });
  const watch = new pg.Client({ connectionString: databaseUrl });
  await Promise.all([db.connect(), watch.connect()]);
  await db.query('BEGIN');
  await db.query(lock, params);
  const holder = (await db.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  let released = false;
  return {
    async waiters(n: number): Promise<void> {
      while ((await watch.query(WAITERS, [holder])).rows[0].n < n)
        await new Promise((r) => setTimeout(r, 20));
    },
    /** Commit the hold and close both connections; again: nothing. */
    async release(): Promise<void> {
      if (released) return;
      released = true;
      await db.query('COMMIT');
      await Promise.all([db.end(), watch.end()]);
    },
  };
}
