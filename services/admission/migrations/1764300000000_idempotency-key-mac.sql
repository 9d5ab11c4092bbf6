-- Up Migration
-- An Idempotency-Key is stored as a keyed MAC (HMAC-SHA256 under DNC_IDEMPOTENCY_KEY_SECRET), no longer
-- as its plain SHA-256: "only a keyed non-reversible fingerprint is retained" (spec, Idempotency 4).
-- A record written by this release has key_mac set (and, in the `keyed` form, key_hash = key_mac);
-- one written before has key_mac NULL and is found by its key_hash until the purge removes it. The
-- unique index is what decides between a `transition` pod and a `keyed` pod claiming the same key at
-- once during an upgrade (services/admission/src/store/claims.ts). The column starts NULL everywhere,
-- so the index is built without rewriting the table.
ALTER TABLE admission.idempotency_records ADD COLUMN key_mac bytea;
CREATE UNIQUE INDEX idempotency_records_key_mac ON admission.idempotency_records (key_id, key_mac);
-- A `keyed` pod asks every 30 s whether a pod of the older release wrote lately (key-form.ts); once the
-- records it wrote are purged this index is empty.
CREATE INDEX idempotency_records_without_mac ON admission.idempotency_records (created_at)
  WHERE key_mac IS NULL;

-- Down Migration
DROP INDEX admission.idempotency_records_without_mac;
DROP INDEX admission.idempotency_records_key_mac;
ALTER TABLE admission.idempotency_records DROP COLUMN key_mac;
