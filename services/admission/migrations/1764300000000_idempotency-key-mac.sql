-- Up Migration
-- An Idempotency-Key is stored as a keyed MAC (HMAC-SHA256 under DNC_IDEMPOTENCY_KEY_SECRET), no longer
-- as its plain SHA-256: "only a keyed non-reversible fingerprint is retained" (spec, Idempotency 4).
-- A record written by this release has key_mac set (and, in the `keyed` form, key_hash = key_mac);
-- one written before has key_mac NULL and is found by its key_hash until the purge removes it. Adding
-- a nullable column changes the catalogue only (a moment's lock, within the migration lock timeout);
-- its indexes are built without blocking the serving release in the next migration.
ALTER TABLE admission.idempotency_records ADD COLUMN key_mac bytea;

-- What the records' MACs are keyed with, as a MAC of a fixed text under the same secret (never the
-- secret): a process started with another secret would find none of the records and admit, and charge,
-- every exact retry again, so it refuses to start instead (store/key-secret-check.ts).
CREATE TABLE admission.idempotency_key_check (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  check_mac bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Down Migration
DROP TABLE admission.idempotency_key_check;
ALTER TABLE admission.idempotency_records DROP COLUMN key_mac;
