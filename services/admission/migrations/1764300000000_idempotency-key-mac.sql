-- Up Migration
-- An Idempotency-Key is stored as a keyed MAC (HMAC-SHA256 under DNC_IDEMPOTENCY_KEY_SECRET), no longer
-- as its plain SHA-256: "only a keyed non-reversible fingerprint is retained" (spec, Idempotency 4).
-- A record written by this release has key_mac set (and, in the `keyed` form, key_hash = key_mac);
-- one written before has key_mac NULL and is found by its key_hash until the purge removes it. Adding
-- a nullable column changes the catalogue only, under a moment's exclusive lock: waited for 2 s at
-- most (a long transaction of the serving release holding the table), so that the release's claims
-- queue behind it no longer than that; the migration then fails and runs again. Its indexes are built
-- without blocking that release in the next migration.
SET LOCAL lock_timeout = '2s';
ALTER TABLE admission.idempotency_records ADD COLUMN key_mac bytea;

-- Down Migration
ALTER TABLE admission.idempotency_records DROP COLUMN key_mac;
