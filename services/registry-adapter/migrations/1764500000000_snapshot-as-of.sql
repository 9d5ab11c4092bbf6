-- Up Migration
-- When the registry was consulted for a snapshot (LoadHeader.as_of): its time for the freshness guard and
-- the X-Registry-Snapshot-At header. An add or remove without one keeps its base's, so a month-old copy
-- plus deltas of one's own is still a month old. NULL: as of its commit (created_at).
ALTER TABLE snapshots ADD COLUMN as_of timestamptz;

-- Down Migration
ALTER TABLE snapshots DROP COLUMN as_of;
