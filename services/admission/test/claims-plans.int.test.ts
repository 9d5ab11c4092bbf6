import { randomUUID } from 'node:crypto';
import { createPool } from '@dnc/kit';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ClaimStore } from '../src/store/index.js';
import { claimSync, migratedAdmissionDatabase } from './claim-store.js';

// Found by an A/B bench (2026-12-05): the claim INSERT checked the older release's records with NOT EXISTS.
// Its statement is named, so PostgreSQL keeps one plan per connection, chosen while the table was small: a
// hash anti-join over a scan of the whole table. Every batch after scanned every record kept (8 to 31 days
// of them): PostgreSQL's CPU per request doubled and throughput fell round after round. Claims and lookups
// must probe indexes whatever plan they keep: counted here as the table's sequential scans.
const databaseUrl = migratedAdmissionDatabase('admission_claim_plans');

async function seqScans(): Promise<number> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const r = await db.query(
      "SELECT seq_scan::int AS n FROM pg_stat_user_tables WHERE schemaname = 'admission' AND relname = 'idempotency_records'",
    );
    return r.rows[0].n;
  } finally {
    await db.end();
  }
}

describe('claims and lookups on a table that grew after their plans were made', () => {
  for (const form of ['keyed', 'transition'] as const) {
    it(`${form}: no sequential scan of the records`, async () => {
      // One connection: every statement's plan is made, and kept, on it while the table is (nearly) empty.
      const pool = createPool(databaseUrl, 1);
      try {
        const store = new ClaimStore(pool);
        store.useForm(form, true);
        const keyId = randomUUID();
        for (let i = 0; i < 12; i++) {
          await claimSync(store, keyId, `${form}-early-${i}`);
          await claimSync(store, keyId, `${form}-early-${i}`); // taken: looked up
        }
        await pool.query(
          `INSERT INTO admission.idempotency_records (key_id, key_hash, key_mac, fingerprint, kind, state, admission_id)
           SELECT gen_random_uuid(), k, k, 'v1:00', 1, 'completed', gen_random_uuid()
           FROM (SELECT sha256(int4send(n)) AS k FROM generate_series(1, 50000) AS n) AS keys`,
        );
        const before = await seqScans();
        for (let i = 0; i < 20; i++) {
          expect(await claimSync(store, keyId, `${form}-late-${i}`)).toBeUndefined();
          expect(await claimSync(store, keyId, `${form}-late-${i}`)).toBeDefined();
        }
        await pool.end(); // its backend reports its statistics as it exits
        await new Promise((r) => setTimeout(r, 500));
        expect((await seqScans()) - before).toBe(0);
      } finally {
        await pool.end().catch(() => undefined);
      }
    });
  }
});
