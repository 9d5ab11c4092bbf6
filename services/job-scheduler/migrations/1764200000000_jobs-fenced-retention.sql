-- Up Migration
-- A fence is kept for the idempotency retention, then purged by the sweeper (sweeps.ts, purgeFences):
-- the index lets the sweeper find the old ones without reading the table each tick.
CREATE INDEX fenced_jobs_fenced_at ON jobs.fenced_jobs (fenced_at);

-- Down Migration
DROP INDEX jobs.fenced_jobs_fenced_at;
