-- Up Migration
-- Which load a snapshot was made from, for every load, not only deltas (delta_digest of the migration
-- before, never read, goes): load_digest is a digest of its mode and its numbers (sorted, distinct),
-- load_as_of the as_of the load gave (NULL: none). The same load again (its answer lost, the command
-- re-run) is known by them: right after itself it is answered as the load it repeats; otherwise refused
-- unless meant (a retried "remove X" after a later "add X" would answer X safe; last month's file loaded
-- again would drop every number registered since and date the copy anew). NULL digest: a seed, or a load
-- committed before this column (not recognised).
-- IF [NOT] EXISTS: a database migrated by an unreleased commit in between (2f058d1) already has them.
ALTER TABLE snapshots DROP COLUMN IF EXISTS delta_digest, ADD COLUMN IF NOT EXISTS load_digest text,
  ADD COLUMN IF NOT EXISTS load_as_of timestamptz;
CREATE INDEX IF NOT EXISTS snapshots_load_digest ON snapshots (load_digest);

-- Down Migration
DROP INDEX snapshots_load_digest;
ALTER TABLE snapshots DROP COLUMN load_digest, DROP COLUMN load_as_of, ADD COLUMN delta_digest text;
