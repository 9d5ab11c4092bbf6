import { randomUUID } from 'node:crypto';
import { createPool } from '@dnc/kit';
import type pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { ClaimStore } from '../src/store/index.js';
import { claimSync, migratedAdmissionDatabase } from './claim-store.js';

// Found by a review (2026-12-05): claims are inserted in batches, each in the order its requests came. Two
// batches in flight at once (two replicas, or one replica's two) holding keys X and Y in opposite orders
// each waited for the other's uncommitted row: PostgreSQL ended one as a deadlock (40P01), failing every
// claim of that batch, up to 256 requests of other customers. Rows are now inserted in key order.
let pool: pg.Pool;
migratedAdmissionDatabase('admission_claims_order', async (databaseUrl) => {
  pool = createPool(databaseUrl, 4);
  // Each row's insert takes a moment: two batches of the same keys overlap for certain.
  await pool.query(`CREATE FUNCTION admission.slow_claim() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM pg_sleep(0.2); RETURN NEW; END $$`);
  await pool.query(`CREATE TRIGGER slow_claim BEFORE INSERT ON admission.idempotency_records
    FOR EACH ROW EXECUTE FUNCTION admission.slow_claim()`);
});
afterAll(async () => {
  await pool.end();
});

describe('two batches of claims of the same keys in opposite orders', () => {
  it('never deadlock: each key claimed once, every other claim answered with it', async () => {
    for (const form of ['keyed', 'transition'] as const) {
      const a = new ClaimStore(pool);
      const b = new ClaimStore(pool);
      a.useForm(form, true);
      b.useForm(form, true);
      const keyId = randomUUID();
      const keys = Array.from({ length: 6 }, (_, i) => `${form}-${i}`);
      // One batch each (claims submitted in one turn leave together), the keys in opposite orders.
      const answers = await Promise.allSettled([
        ...keys.map((k) => claimSync(a, keyId, k)),
        ...keys.toReversed().map((k) => claimSync(b, keyId, k)),
      ]);
      const failed = answers.filter((x) => x.status === 'rejected').map((x) => String(x.reason));
      expect(failed).toEqual([]);
      const made = answers.filter((x) => x.status === 'fulfilled' && x.value === undefined);
      expect(made).toHaveLength(keys.length);
      const stored = await pool.query(
        'SELECT count(*)::int AS n FROM admission.idempotency_records WHERE key_id = $1',
        [keyId],
      );
      expect(stored.rows[0].n).toBe(keys.length);
    }
  });
});
