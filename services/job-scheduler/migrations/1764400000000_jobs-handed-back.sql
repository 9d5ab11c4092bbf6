-- Up Migration
-- Executions a shutting-down worker gave back (store/jobs.ts `handBack`): they do not count against
-- DNC_JOB_MAX_ATTEMPTS. `attempts` stays the number of executions started (each one's identity in the
-- worker's logs and the operator's view).
ALTER TABLE jobs.jobs ADD COLUMN handed_back integer NOT NULL DEFAULT 0 CHECK (handed_back >= 0);

-- Down Migration
ALTER TABLE jobs.jobs DROP COLUMN handed_back;
