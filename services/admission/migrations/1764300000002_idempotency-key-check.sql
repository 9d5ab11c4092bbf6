-- Up Migration
-- What the records' MACs are keyed with, as a MAC of a fixed text under the same secret (never the
-- secret): a process started with another secret would find none of the records and admit, and charge,
-- every exact retry again, so it refuses to start instead (src/store/key-secret-check.ts).
CREATE TABLE IF NOT EXISTS admission.idempotency_key_check (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  check_mac bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Down Migration
DROP TABLE admission.idempotency_key_check;
