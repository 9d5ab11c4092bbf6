-- Up Migration
-- What an organization sees of its keys in the dashboard: a name given at creation and when the key
-- last authenticated a request (written in batches by KeyUsage, services/admission/src/key-usage.ts).
ALTER TABLE admission.api_keys
  ADD COLUMN name text NOT NULL DEFAULT '',
  ADD COLUMN last_used_at timestamptz;

-- Down Migration
ALTER TABLE admission.api_keys DROP COLUMN last_used_at, DROP COLUMN name;
