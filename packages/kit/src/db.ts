import { createHash } from 'node:crypto';
import { finished } from 'node:stream';
import { runner } from 'node-pg-migrate';
import pg from 'pg';
import { isDependencyOutage } from './errors.js';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

// BIGINT counts (quota ledgers) are read as numbers: they stay far below 2^53.
pg.types.setTypeParser(20, (v) => Number.parseInt(v, 10));

/** PostgreSQL's own bound on a statement (a slow plan, a lock wait). */
export const STATEMENT_TIMEOUT_MS = 15_000;
/**
 * The client's bound on a query, answer included: a connection that stops answering (a network path
 * black-holed, a server frozen) fails the query here, where `statement_timeout` never fires. Longer
 * than the statement timeout, so a slow statement still ends with PostgreSQL's own error.
 */
export const QUERY_TIMEOUT_MS = 20_000;
/** Waiting for a connection (opening one, or a free one of the pool). */
export const CONNECT_TIMEOUT_MS = 3_000;

/**
 * PostgreSQL ends a session that sits inside a transaction doing nothing this long, and its locks go
 * with it. A process frozen or cut off mid-transaction (SIGSTOP, a VM paused, a partition: nothing closes
 * its connection) held its row locks without limit: a job whose final write it was making could not be
 * cancelled (503 every time) nor expired at its hard cap (the sweep skips locked rows). Found by a review,
 * 2026-12-05. A live process is never idle inside a transaction for more than a few milliseconds: every
 * transaction here runs statements back to back, with no call to another service in between.
 */
export const IDLE_IN_TRANSACTION_TIMEOUT_MS = 30_000;

export interface PoolOptions {
  /** Client-side bound on one query (QUERY_TIMEOUT_MS); tests shorten it. */
  queryTimeoutMs?: number;
  /** IDLE_IN_TRANSACTION_TIMEOUT_MS unless given (DNC_PG_IDLE_IN_TRANSACTION_MS). */
  idleInTransactionTimeoutMs?: number | undefined;
}

export function createPool(databaseUrl: string, max = 10, options: PoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    idleTimeoutMillis: 30_000,
    // Bound every statement: a stuck query must not hang a request.
    statement_timeout: STATEMENT_TIMEOUT_MS,
    query_timeout: options.queryTimeoutMs ?? QUERY_TIMEOUT_MS,
    idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs ?? IDLE_IN_TRANSACTION_TIMEOUT_MS,
    // A peer that vanished without a FIN (a host gone, a NAT entry dropped) is noticed on idle
    // connections too.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    application_name: 'dnc-scrub',
  });
  // An idle client losing its connection must not crash the process.
  pool.on('error', () => {});
  // Nor a checked-out client losing it between two statements (no query to reject): its next query
  // fails, the caller's error path runs, and the pool replaces it.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/**
 * A pg-copy-streams COPY stream (give it to `client.query`) under a bound of its own. pg arms the
 * pool's client read timer (QUERY_TIMEOUT_MS) on a COPY stream too, where it bounds the whole
 * transfer: a registry of 10-30 M keys is one COPY each way, longer than a query's bound. And a COPY TO
 * stream never calls the callback pg wraps to clear that timer, so it fired after the stream had
 * ended, on a connection serving another query by then. Here the stream carries `timeoutMs` (pg reads
 * a submitted query's own `query_timeout` first) and the timer is cleared as soon as it ends or fails.
 */
export function boundedCopy<S extends NodeJS.ReadableStream | NodeJS.WritableStream>(
  stream: S,
  timeoutMs: number,
): S {
  const s = stream as S & { query_timeout?: number; callback?: () => void };
  s.query_timeout = timeoutMs;
  // pg replaces `callback` when the stream is submitted: the one read here clears its timer.
  finished(s, () => s.callback?.());
  return stream;
}

/** Create the database named in the URL when it is missing (local stack and tests). */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!/^[A-Za-z0-9_]+$/.test(name))
    throw new Error('DATABASE_URL: database name must be letters, digits or _');
  url.pathname = '/postgres';
  const client = new pg.Client({ connectionString: url.toString(), connectionTimeoutMillis: 3_000 });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) {
      try {
        await client.query(`CREATE DATABASE "${name}"`);
      } catch (error) {
        // Created concurrently by another service starting at the same time: 42P04 (duplicate
        // database) or 23505 (unique violation on pg_database's name index).
        const code = (error as { code?: string }).code;
        if (code !== '42P04' && code !== '23505') throw error;
      }
    }
  } finally {
    await client.end();
  }
}

/**
 * How long a migration statement waits for a table lock before the migration fails (and is retried by
 * the next run). Without it, an ALTER queued behind a long transaction of the serving release made every
 * later query on that table queue behind it, for as long as the hook could wait (found by a review of
 * upgrade safety, 2026-12-03): better a failed upgrade, run again, than stalled live traffic.
 */
export const MIGRATION_LOCK_TIMEOUT_MS = 10_000;

/**
 * Run one service's migrations into its own schema (node-pg-migrate, SQL files). Each schema keeps its
 * own migrations table and its own advisory lock, so services migrate independently.
 */
export async function migrateSchema(
  databaseUrl: string,
  schema: string,
  dir: string,
  lockTimeoutMs = MIGRATION_LOCK_TIMEOUT_MS,
): Promise<string[]> {
  const lockValue = createHash('sha256').update(`dnc-migrate:${schema}`).digest().readUInt32BE(0);
  // The runner's advisory lock does not wait: another process of the same service (API and worker
  // roles, replicas) may be migrating right now, so wait for it and try again, within a bound.
  const deadline = Date.now() + 60_000;
  let applied: Awaited<ReturnType<typeof runner>>;
  for (;;) {
    try {
      applied = await runner({
        // client_connection_check_interval: a statement whose client went away (an upgrade hook killed at
        // its deadline) ends within 5 s instead of running on with the migration's locks.
        databaseUrl: {
          connectionString: databaseUrl,
          options: `-c lock_timeout=${lockTimeoutMs} -c client_connection_check_interval=5000`,
        },
        dir,
        schema,
        createSchema: true,
        migrationsSchema: schema,
        createMigrationsSchema: true,
        migrationsTable: 'pgmigrations',
        direction: 'up',
        checkOrder: true,
        singleTransaction: true,
        lockValue,
        log: () => {},
      });
      break;
    } catch (error) {
      const busy = error instanceof Error && /another migration is already running/i.test(error.message);
      if (!busy || Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 200 + Math.random() * 300));
    }
  }
  return applied.map((m) => m.name);
}

export async function probePostgres(pool: pg.Pool): Promise<boolean> {
  const r = await pool.query('SELECT 1 AS ok');
  return r.rows[0]?.ok === 1;
}

/**
 * True when the connection an error came from cannot be trusted any more (timed out with a query
 * still in flight, reset, closed): it is destroyed instead of going back to the pool, where the next
 * query would wait behind the lost one.
 */
export function isBrokenConnection(error: unknown): boolean {
  return isDependencyOutage(error);
}

/**
 * Run `work` in one transaction; rolled back on any error. A connection broken on the way is
 * destroyed without a ROLLBACK (PostgreSQL rolls back a transaction whose connection is gone).
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    if (isBrokenConnection(error)) broken = error as Error;
    else
      await client.query('ROLLBACK').catch((e: unknown) => {
        broken = e instanceof Error ? e : new Error('rollback failed');
      });
    throw error;
  } finally {
    client.release(broken);
  }
}
