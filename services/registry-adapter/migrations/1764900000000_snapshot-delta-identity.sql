-- Up Migration
-- Which delta a snapshot was made from (an add or remove): a digest of its mode, its as_of and its
-- numbers (sorted, distinct). A delta loaded again after other deltas (a retried "remove X" after a later
-- "add X": X answered safe) is refused unless meant; loaded again right after itself it is answered as the
-- load it repeats. NULL: a replace or seed, or a delta committed before this column.
ALTER TABLE snapshots ADD COLUMN delta_digest text;

-- Down Migration
ALTER TABLE snapshots DROP COLUMN delta_digest;
