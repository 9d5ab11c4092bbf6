-- Up Migration
-- The sweepers' turn (sweeper.ts, store/sweep-lease.ts): one replica sweeps at a time, for as long as its
-- lease lasts, renewed between steps. It replaces a session advisory lock held for the whole tick, which a
-- replica stopped or cut off mid-tick kept for as long as its connection lived (hours), every other
-- replica skipping every sweep meanwhile. One row; the database's clock dates it.
CREATE TABLE jobs.sweep_lease (
  id smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
  holder uuid NOT NULL,
  expires_at timestamptz NOT NULL
);

-- Down Migration
DROP TABLE jobs.sweep_lease;
