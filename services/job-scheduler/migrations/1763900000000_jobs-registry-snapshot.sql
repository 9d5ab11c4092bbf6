-- Up Migration
-- The oldest registry snapshot any outcome of a succeeded job was read from: published with the result
-- (X-Registry-Snapshot-At) as evidence of how fresh the registry was. Null for jobs that succeeded before.
ALTER TABLE jobs.jobs ADD COLUMN registry_snapshot_at timestamptz;

-- Down Migration
ALTER TABLE jobs.jobs DROP COLUMN registry_snapshot_at;
