-- Up Migration
-- The customer quota ledger. Monthly accounts (UTC calendar month) per organization and country;
-- a reservation is the unit of idempotency (reserve / commit / release by reservation id); a usage
-- record is written exactly once per committed reservation.
CREATE TABLE quota.limits (
  org_id text NOT NULL,
  country text NOT NULL,
  monthly_limit bigint NOT NULL CHECK (monthly_limit >= 0),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, country)
);

CREATE TABLE quota.accounts (
  org_id text NOT NULL,
  country text NOT NULL,
  period text NOT NULL,
  used bigint NOT NULL DEFAULT 0 CHECK (used >= 0),
  reserved bigint NOT NULL DEFAULT 0 CHECK (reserved >= 0),
  PRIMARY KEY (org_id, country, period)
);

CREATE TABLE quota.reservations (
  reservation_id text PRIMARY KEY,
  org_id text NOT NULL,
  country text NOT NULL,
  period text NOT NULL,
  amount bigint NOT NULL CHECK (amount >= 0),
  kind smallint NOT NULL,
  state text NOT NULL CHECK (state IN ('reserved', 'committed', 'released')),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- The sweeper looks for old open reservations only.
CREATE INDEX reservations_open ON quota.reservations (created_at) WHERE state = 'reserved';

CREATE TABLE quota.usage_records (
  id bigserial PRIMARY KEY,
  reservation_id text NOT NULL UNIQUE,
  org_id text NOT NULL,
  country text NOT NULL,
  period text NOT NULL,
  count bigint NOT NULL,
  kind smallint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX usage_records_org ON quota.usage_records (org_id, country, created_at);

-- Down Migration
DROP TABLE quota.usage_records;
DROP TABLE quota.reservations;
DROP TABLE quota.accounts;
DROP TABLE quota.limits;
