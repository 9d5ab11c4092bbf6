import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureDatabase, migrateSchema } from '@dnc/kit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropDatabase, uniqueDatabaseUrl } from '../../../test/support/stack.js';

// Found by a review (2026-12-05): the indexes of key_mac were built in the migration's one transaction,
// behind the ALTER's lock: while they were built (tens of seconds on a table of tens of millions of rows),
// every claim and lookup of the release still serving waited, past its statement timeout. They are built
// CONCURRENTLY now. Here the release still serving goes on claiming keys while the migration runs over a
// table of 600,000 records: none of its claims may wait for the builds. And a query elsewhere in the
// database outlasting the migration's lock timeout: a concurrent build waits for it, and was cancelled at
// that timeout after its scans (found by the second review): the builds wait as long as it takes.
const MIGRATIONS = fileURLToPath(new URL('../migrations', import.meta.url));
const FIRST_OF_THIS_RELEASE = '1764300000000';
const databaseUrl = uniqueDatabaseUrl('admission_online');
const before = mkdtempSync(path.join(tmpdir(), 'dnc-admission-migrations-'));

/** A claim as the release before wrote it: key_hash, nothing else of the key. */
const olderClaim = (db: pg.Client, n: number) =>
  db.query(
    `INSERT INTO admission.idempotency_records (key_id, key_hash, fingerprint, kind, state, admission_id)
     VALUES (gen_random_uuid(), sha256($1::bytea), 'v1:00', 1, 'in_progress', gen_random_uuid())
     ON CONFLICT (key_id, key_hash) DO NOTHING`,
    [Buffer.from(`key-${n}`)],
  );

beforeAll(async () => {
  await ensureDatabase(databaseUrl);
  for (const file of readdirSync(MIGRATIONS).filter((f) => f < FIRST_OF_THIS_RELEASE))
    copyFileSync(path.join(MIGRATIONS, file), path.join(before, file));
  await migrateSchema(databaseUrl, 'admission', before);
});
afterAll(async () => {
  rmSync(before, { recursive: true, force: true });
  await dropDatabase(databaseUrl);
});

describe('the key_mac migration beside the release still serving', () => {
  it("never holds that release's claims, and leaves valid indexes", async () => {
    const serving = new pg.Client({ connectionString: databaseUrl });
    await serving.connect();
    try {
      await serving.query(
        `INSERT INTO admission.idempotency_records (key_id, key_hash, fingerprint, kind, state, admission_id)
         SELECT gen_random_uuid(), sha256(int4send(n)), 'v1:00', 1, 'completed', gen_random_uuid()
         FROM generate_series(1, 600000) AS n`,
      );
      const other = new pg.Client({ connectionString: databaseUrl });
      await other.connect();
      const elsewhere = other.query('SELECT pg_sleep(2.5)').finally(() => other.end());
      let done = false;
      const t0 = Date.now();
      // A lock timeout of 1 s: shorter than the query elsewhere.
      const migrated = migrateSchema(databaseUrl, 'admission', MIGRATIONS, 1_000).finally(() => {
        done = true;
      });
      let slowest = 0;
      let claims = 0;
      while (!done) {
        const t = Date.now();
        await olderClaim(serving, claims++);
        slowest = Math.max(slowest, Date.now() - t);
      }
      const applied = await migrated;
      await elsewhere;
      const took = Date.now() - t0;
      // A plain CREATE INDEX in the migration's transaction held every claim for about the whole build.
      expect({ took, claims, slowest }).toEqual({
        took: expect.any(Number),
        claims: expect.any(Number),
        slowest: expect.toSatisfy((ms: number) => ms < Math.max(100, took / 4)),
      });
      expect(claims).toBeGreaterThan(10);
      expect(applied).toEqual([
        '1764300000000_idempotency-key-mac',
        '1764300000001_idempotency-key-mac-indexes',
        '1764300000002_idempotency-key-check',
      ]);
      const indexes = await serving.query(
        `SELECT c.relname AS name, i.indisvalid AS valid, i.indisunique AS unique
         FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         WHERE c.relname IN ('idempotency_records_key_mac', 'idempotency_records_without_mac') ORDER BY 1`,
      );
      expect(indexes.rows).toEqual([
        { name: 'idempotency_records_key_mac', valid: true, unique: true },
        { name: 'idempotency_records_without_mac', valid: true, unique: false },
      ]);
    } finally {
      await serving.end();
    }
  });
});
