import { TcpProxy } from '@dnc/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, inTransaction } from '../src/db.js';

// Found by the chaos suite (S8): a PostgreSQL connection cut while a client was checked out of the
// pool and between two statements crashed quota, the scheduler and a worker with an unhandled
// 'error' event. The connection here goes through a TCP proxy that resets it for real.

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

describe('a pool whose connections are cut', () => {
  it('fails the transaction in progress and keeps the process alive', async () => {
    const pool = createPool(url, 1);
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown) => uncaught.push(e);
    process.prependListener('uncaughtException', onUncaught);
    try {
      const cut = inTransaction(pool, async (client) => {
        await client.query('SELECT 1');
        // Between two statements of the transaction, the connection is reset.
        proxy.resetAll();
        await new Promise((r) => setTimeout(r, 300));
        await client.query('SELECT 2');
      });
      await expect(cut).rejects.toThrow();
      expect(uncaught).toEqual([]);
      // The pool recovers with a fresh connection.
      const r = await pool.query('SELECT 3 AS n');
      expect(r.rows[0].n).toBe(3);
    } finally {
      process.removeListener('uncaughtException', onUncaught);
      await pool.end();
    }
  });
});

describe('isDependencyOutage', () => {
  it('recognizes what pg raises when PostgreSQL is unreachable or drops the connection, and nothing else', async () => {
    const { isDependencyOutage } = await import('../src/errors.js');
    const pool = createPool('postgres://postgres@127.0.0.1:1/none', 1);
    const refused = await pool.query('SELECT 1').catch((e: unknown) => e);
    await pool.end();
    expect(isDependencyOutage(refused)).toBe(true);
    const proxyPool = createPool(url, 1);
    const cut = await inTransaction(proxyPool, async (client) => {
      proxy.resetAll();
      await new Promise((r) => setTimeout(r, 200));
      await client.query('SELECT 1');
    }).catch((e: unknown) => e);
    await proxyPool.end();
    expect(isDependencyOutage(cut)).toBe(true);
    // No connection slot left (max_connections reached, here a role's CONNECTION LIMIT): SQLSTATE 53300
    // when a pool grows or a pod starts at peak. An outage to retry (503), not a bug (500). Found by a
    // review of the connection budget (2026-12-03).
    const role = `dnc_full_${process.pid}`;
    const admin = createPool(DATABASE_URL, 1);
    try {
      await admin.query(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 0`);
      const full = new URL(DATABASE_URL);
      full.username = role;
      full.password = '';
      const fullPool = createPool(full.toString(), 1);
      const noSlot = await fullPool.query('SELECT 1').catch((e: unknown) => e);
      await fullPool.end();
      expect((noSlot as { code?: string }).code).toBe('53300');
      expect(isDependencyOutage(noSlot)).toBe(true);
    } finally {
      await admin.query(`DROP ROLE IF EXISTS ${role}`);
      await admin.end();
    }
    expect(isDependencyOutage(new Error('duplicate key value violates unique constraint'))).toBe(false);
    expect(isDependencyOutage(new TypeError('x is undefined'))).toBe(false);
  });
});
