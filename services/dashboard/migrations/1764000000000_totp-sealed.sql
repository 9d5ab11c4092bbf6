-- Up Migration
-- TOTP seeds sealed at rest (AES-256-GCM under DNC_TOTP_KEYS, see src/domain/sealing.ts): each sealed
-- value beside the id of the key that sealed it. The plaintext columns of the first release stay one
-- release longer, for the rollout only, and can no longer hold a seed:
--   * the dashboard seals what they still hold when it starts, before it serves (src/store/sealing.ts:
--     only the dashboard has the key, so SQL cannot), leaving `totp_secret` = '!sealed' where a second
--     factor is on;
--   * '!sealed' is not base32, so a replica of the previous release still running during the rollout
--     fails closed on it (its second-factor check errors; it never reads "no second factor");
--   * the constraint below (NOT VALID: it holds for every row written from now on, and the sealing
--     rewrites the old ones) refuses a plaintext seed from such a replica.
-- A later migration drops both columns.
ALTER TABLE dashboard.members
  ADD COLUMN totp_sealed bytea,
  ADD COLUMN totp_key_id text,
  ADD COLUMN totp_pending_sealed bytea,
  ADD COLUMN totp_pending_key_id text,
  ADD CONSTRAINT members_totp_sealed_key CHECK ((totp_sealed IS NULL) = (totp_key_id IS NULL)),
  ADD CONSTRAINT members_totp_pending_sealed_key
    CHECK ((totp_pending_sealed IS NULL) = (totp_pending_key_id IS NULL)),
  ADD CONSTRAINT members_totp_no_plaintext
    CHECK (totp_pending_secret IS NULL AND (totp_secret IS NULL OR totp_secret = '!sealed')) NOT VALID;

-- Down Migration
ALTER TABLE dashboard.members
  DROP CONSTRAINT members_totp_no_plaintext,
  DROP CONSTRAINT members_totp_pending_sealed_key,
  DROP CONSTRAINT members_totp_sealed_key,
  DROP COLUMN totp_pending_key_id,
  DROP COLUMN totp_pending_sealed,
  DROP COLUMN totp_key_id,
  DROP COLUMN totp_sealed;
