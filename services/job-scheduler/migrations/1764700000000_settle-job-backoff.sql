-- Up Migration
-- A quota settlement that failed for one job alone (quota answered its other jobs of the same account):
-- that job waits (doubling from the sweep interval, at most a minute) and its account's others go on.
-- Found by a review (2026-12-04): the wait was by account only, so one job whose settlement quota refused
-- every time (its reservation id unreadable, say) held its account's other settlements for good: it was the
-- oldest, tried first after every wait, and a tick stopped at it.
ALTER TABLE jobs.jobs
  ADD COLUMN settle_failures integer NOT NULL DEFAULT 0 CHECK (settle_failures >= 0),
  ADD COLUMN settle_after timestamptz;

-- Down Migration
ALTER TABLE jobs.jobs DROP COLUMN settle_after, DROP COLUMN settle_failures;
