-- Up Migration
-- Quota settlements that failed, by account (organization and country): the sweeper leaves that account's
-- jobs for later (doubling from the sweep interval, at most a minute) and settles the others meanwhile.
-- Found by a review (2026-12-04): settlements were retried oldest first and a tick stopped at the first
-- that failed, so one account row held locked stopped every organization's settlements. In the database,
-- not in each replica, so that the turn passing between replicas does not retry an account at once, and so
-- that the choice of the jobs to settle (oldest 100) passes over the waiting accounts.
CREATE TABLE jobs.settle_backoff (
  org_id text NOT NULL,
  country text NOT NULL,
  failures integer NOT NULL CHECK (failures > 0),
  until timestamptz NOT NULL,
  PRIMARY KEY (org_id, country)
);

-- Down Migration
DROP TABLE jobs.settle_backoff;
