-- Up Migration
-- The batch functions look reservations and accounts up by key only. Their plans are cached and
-- generic (the size of the id array is unknown), and a ledger that grew faster than autovacuum's
-- statistics (a new month, a burst after a deploy) is planned as a small table: a sequential scan of
-- every reservation for every batch, measured at 85 scans a second reading ~5,000 rows each under the
-- single-number benchmark. Inside these functions a sequential scan is never the right plan.
ALTER FUNCTION quota.reserve_many(text[], text[], text[], bigint[], smallint[], text) SET enable_seqscan = off;
ALTER FUNCTION quota.commit_many(text[]) SET enable_seqscan = off;

-- Down Migration
ALTER FUNCTION quota.reserve_many(text[], text[], text[], bigint[], smallint[], text) RESET enable_seqscan;
ALTER FUNCTION quota.commit_many(text[]) RESET enable_seqscan;
