-- Up Migration
-- One schema per country (registry_<cc>); these statements run with that schema on the search path.
-- A snapshot is an immutable table numbers_<id> of registry keys (the subscriber line as an integer,
-- written sorted and distinct); current_snapshot points at the one being served and is flipped in the
-- same transaction that fills the new table, so no reader ever sees a half-loaded registry.
CREATE SEQUENCE snapshot_ids;

CREATE TABLE snapshots (
  id bigint PRIMARY KEY,
  created_at timestamptz NOT NULL DEFAULT now(),
  mode text NOT NULL CHECK (mode IN ('replace', 'add', 'remove', 'seed')),
  size bigint NOT NULL CHECK (size >= 0),
  lines_read bigint NOT NULL,
  accepted bigint NOT NULL,
  rejected bigint NOT NULL,
  based_on bigint REFERENCES snapshots (id),
  -- NULL once the numbers table of an old snapshot has been dropped.
  table_name text
);

CREATE TABLE current_snapshot (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  snapshot_id bigint NOT NULL REFERENCES snapshots (id),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Down Migration
DROP TABLE current_snapshot;
DROP TABLE snapshots;
DROP SEQUENCE snapshot_ids;
