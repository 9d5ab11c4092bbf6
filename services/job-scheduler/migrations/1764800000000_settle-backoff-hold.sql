-- Up Migration
-- A hold (quota may be down for every account: settle-in-turn.ts) leaves an account's count of failures as it
-- was; an account held before it ever failed alone is recorded with none, so that its first failure of its
-- own waits twice the sweep interval like any first failure, not four times (found by a review, 2026-12-04).
ALTER TABLE jobs.settle_backoff DROP CONSTRAINT settle_backoff_failures_check;
ALTER TABLE jobs.settle_backoff ADD CONSTRAINT settle_backoff_failures_check CHECK (failures >= 0);

-- Down Migration
UPDATE jobs.settle_backoff SET failures = 1 WHERE failures = 0;
ALTER TABLE jobs.settle_backoff DROP CONSTRAINT settle_backoff_failures_check;
ALTER TABLE jobs.settle_backoff ADD CONSTRAINT settle_backoff_failures_check CHECK (failures > 0);
