import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropDatabase, uniqueDatabaseUrl } from '../../../test/support/stack.js';
import { ensureDatabase, migrateSchema } from '../src/db.js';

// Found by a review of upgrade safety (2026-12-03): a migration waited for its table lock as long as it
// took. An ALTER queued behind a long transaction of the serving release made every later query on that
// table queue behind it (PostgreSQL grants locks in order), for as long as the upgrade hook could wait:
// live traffic stalled. A migration now gives up after its lock timeout and runs again later. The lock is
// held here by a real transaction that read the table.
const databaseUrl = uniqueDatabaseUrl('migration_lock');
const dir = mkdtempSync(path.join(tmpdir(), 'dnc-migrations-'));

beforeAll(async () => {
  await ensureDatabase(databaseUrl);
  writeFileSync(path.join(dir, '1700000000000_table.sql'), '-- Up Migration\nCREATE TABLE t (id int);\n');
  expect(await migrateSchema(databaseUrl, 'mlt', dir)).toEqual(['1700000000000_table']);
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await dropDatabase(databaseUrl);
});

describe('a migration that cannot take its lock', () => {
  it('fails after the lock timeout instead of queueing the table behind it, and applies once the lock is free', async () => {
    writeFileSync(
      path.join(dir, '1700000000001_column.sql'),
      '-- Up Migration\nALTER TABLE t ADD COLUMN x int;\n',
    );
    const reader = new pg.Client({ connectionString: databaseUrl });
    await reader.connect();
    try {
      // A transaction of the serving release that read the table and has not ended.
      await reader.query('BEGIN');
      await reader.query('SELECT * FROM mlt.t');
      const t0 = Date.now();
      const failed = await migrateSchema(databaseUrl, 'mlt', dir, 500).then(
        () => undefined,
        (error: { code?: string }) => error,
      );
      expect(failed?.code).toBe('55P03'); // lock_not_available
      expect(Date.now() - t0).toBeLessThan(5_000);
      // Nothing of it applied (one transaction), nothing left queued: the table reads at once.
      const other = new pg.Client({ connectionString: databaseUrl });
      await other.connect();
      try {
        await other.query("SET statement_timeout = '1s'");
        await other.query('SELECT * FROM mlt.t');
      } finally {
        await other.end();
      }
      await reader.query('COMMIT');
    } finally {
      await reader.end();
    }
    expect(await migrateSchema(databaseUrl, 'mlt', dir, 500)).toEqual(['1700000000001_column']);
  });
});
