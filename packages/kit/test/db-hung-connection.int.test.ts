import { TcpProxy } from '@dnc/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, inTransaction, QUERY_TIMEOUT_MS } from '../src/db.js';
import { isDependencyOutage } from '../src/errors.js';

// Issue 14, "hanging dependencies": a PostgreSQL connection that stops answering (a black-holed
// network path: open, every byte swallowed, nothing closed) hung every query on it for ever, and the
// job worker's lease renewals piled up behind it. Every query now has a client-side bound; a timed-out
// connection is thrown away, and the failure is the documented dependency outage (503).

const DATABASE_URL = process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

let proxy: TcpProxy;
let url: string;

beforeAll(async () => {
  const target = new URL(DATABASE_URL);
  proxy = await TcpProxy.start([{ host: target.hostname, port: Number(target.port || 5432) }]);
  target.host = `127.0.0.1:${proxy.port}`;
  url = target.toString();
});
afterAll(async () => {
  await proxy.close();
});

/** The outcome of `p`, or 'still waiting' when it has not settled within `ms`. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | unknown | 'still waiting'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'still waiting'>((r) => {
    timer = setTimeout(() => r('still waiting'), ms);
  });
  try {
    return await Promise.race([p.catch((e: unknown) => e), late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('a pool whose connection is black-holed', () => {
  it('bounds a query and a transaction, answers an outage, and recovers on a fresh connection', async () => {
    const pool = createPool(url, 2, { queryTimeoutMs: 1_000 });
    try {
      await pool.query('SELECT 1');
      await inTransaction(pool, (c) => c.query('SELECT 1'));
      proxy.setFault({ kind: 'blackhole' });
      const t0 = performance.now();
      const query = await within(pool.query('SELECT 2'), 6_000);
      const tx = await within(
        inTransaction(pool, (c) => c.query('SELECT 3')),
        6_000,
      );
      expect(query).toBeInstanceOf(Error);
      expect(tx).toBeInstanceOf(Error);
      expect(isDependencyOutage(query)).toBe(true);
      expect(isDependencyOutage(tx)).toBe(true);
      // The query's bound (1 s), then the transaction's: a new connection is opened through the same
      // black hole and fails at the connect bound (3 s); no ROLLBACK waits on a connection known dead.
      expect(performance.now() - t0).toBeLessThan(7_000);

      proxy.setFault({ kind: 'pass' });
      const r = await pool.query('SELECT 4 AS n');
      expect(r.rows[0].n).toBe(4);
      const t = await inTransaction(pool, (c) => c.query('SELECT 5 AS n'));
      expect(t.rows[0].n).toBe(5);
    } finally {
      proxy.setFault({ kind: 'pass' });
      await pool.end();
    }
  });

  it('has a client-side bound and TCP keepalive by default', () => {
    const pool = createPool(url, 1);
    const o = pool.options as { query_timeout?: number; keepAlive?: boolean; statement_timeout?: number };
    expect(o.query_timeout).toBe(QUERY_TIMEOUT_MS);
    expect(QUERY_TIMEOUT_MS).toBeGreaterThan(o.statement_timeout ?? 0);
    expect(o.keepAlive).toBe(true);
    void pool.end();
  });
});
