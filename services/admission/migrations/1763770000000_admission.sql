-- Up Migration
CREATE TABLE admission.organizations (
  org_id uuid PRIMARY KEY,
  name text NOT NULL,
  suspended boolean NOT NULL DEFAULT false,
  activation_complete boolean NOT NULL DEFAULT true,
  -- NULL: the default technical rate limit.
  rate_limit integer CHECK (rate_limit BETWEEN 1 AND 60000),
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Only the public id (the short prefix shown in listings) and a SHA-256 digest of the key are kept.
CREATE TABLE admission.api_keys (
  key_id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES admission.organizations (org_id),
  public_id text NOT NULL UNIQUE,
  digest bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);
CREATE INDEX api_keys_org ON admission.api_keys (org_id);

CREATE TABLE admission.purchases (
  purchase_id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES admission.organizations (org_id),
  country text NOT NULL,
  status text NOT NULL CHECK (status IN ('pending_payment', 'active', 'lapsed')),
  activated boolean NOT NULL DEFAULT false,
  monthly_quota bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  paid_at timestamptz,
  activated_at timestamptz,
  lapsed_at timestamptz
);
-- At most one open (not lapsed) purchase per organization and country.
CREATE UNIQUE INDEX purchases_open ON admission.purchases (org_id, country) WHERE status <> 'lapsed';

CREATE TABLE admission.maintenance_windows (
  country text PRIMARY KEY,
  until timestamptz NOT NULL,
  set_at timestamptz NOT NULL DEFAULT now()
);

-- Idempotency: scoped to the API key, keyed by a hash of the Idempotency-Key; holds only the keyed
-- fingerprint of (country, phones), the kind, the state and (v2) the job identity.
CREATE TABLE admission.idempotency_records (
  key_id uuid NOT NULL,
  key_hash bytea NOT NULL,
  fingerprint text NOT NULL,
  kind smallint NOT NULL,
  state text NOT NULL CHECK (state IN ('in_progress', 'completed', 'accepted')),
  admission_id uuid NOT NULL UNIQUE,
  job_id uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  claimed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (key_id, key_hash)
);
CREATE INDEX idempotency_records_age ON admission.idempotency_records (created_at);

-- Down Migration
DROP TABLE admission.idempotency_records;
DROP TABLE admission.maintenance_windows;
DROP TABLE admission.purchases;
DROP TABLE admission.api_keys;
DROP TABLE admission.organizations;
