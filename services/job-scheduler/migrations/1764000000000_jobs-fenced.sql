-- Up Migration
-- Job ids admission's claim reconciler gave up on (issue 14): no job of the id was stored, and none ever
-- will be — SubmitJob refuses a fenced id. FenceJob and SubmitJob take the same transaction-scoped
-- advisory lock on the id, so a late SubmitJob and the fence cannot both win.
CREATE TABLE jobs.fenced_jobs (
  job_id uuid PRIMARY KEY,
  fenced_at timestamptz NOT NULL DEFAULT now()
);

-- Down Migration
DROP TABLE jobs.fenced_jobs;
