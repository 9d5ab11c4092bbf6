-- Up Migration
-- Executions a shutting-down worker gave back (store/jobs.ts `handBack`): they do not count against
-- DNC_JOB_MAX_ATTEMPTS. `attempts` stays the number of executions started (each one's identity in the
-- worker's logs and the operator's view). A constant default adds the column without rewriting the
-- table; the check is NOT VALID so the migration does not scan 30 days of jobs under its lock (every
-- existing row holds the default, 0).
ALTER TABLE jobs.jobs ADD COLUMN handed_back integer NOT NULL DEFAULT 0;
ALTER TABLE jobs.jobs ADD CONSTRAINT jobs_handed_back_check CHECK (handed_back >= 0) NOT VALID;

-- Down Migration
ALTER TABLE jobs.jobs DROP CONSTRAINT jobs_handed_back_check;
ALTER TABLE jobs.jobs DROP COLUMN handed_back;
