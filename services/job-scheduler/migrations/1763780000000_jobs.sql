-- Up Migration

-- One row per v2 job. State, reservation and lease live here; JetStream only carries the work.
CREATE TABLE jobs.jobs (
  id uuid PRIMARY KEY,
  org_id text NOT NULL,
  country text NOT NULL,
  status text NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'expired')),
  submitted_count integer NOT NULL CHECK (submitted_count >= 0),
  reservation_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  hard_cap_at timestamptz NOT NULL,
  started_at timestamptz,
  terminal_at timestamptz,
  error text CHECK (error IN ('country_service_maintenance', 'country_service_temporarily_unavailable',
                              'platform_failure', 'job_expired')),
  error_retry_after integer,
  cancel_requested boolean NOT NULL DEFAULT false,
  -- Adapter calls the current lease holder has in flight: cancel waits for them to be reconciled.
  external_calls integer NOT NULL DEFAULT 0,
  lease_token uuid,
  lease_expires_at timestamptz,
  attempts integer NOT NULL DEFAULT 0,
  dispatched_at timestamptz,
  dispatch_count integer NOT NULL DEFAULT 0,
  -- What the reservation needs at terminalization ('commit' | 'release'), and when quota confirmed it.
  quota_settlement text CHECK (quota_settlement IN ('commit', 'release')),
  quota_settled_at timestamptz,
  input_purged_at timestamptz,
  result_purged_at timestamptz,
  CHECK ((status IN ('failed', 'expired')) = (error IS NOT NULL))
);

CREATE INDEX jobs_org_created ON jobs.jobs (org_id, created_at DESC);
CREATE INDEX jobs_active ON jobs.jobs (status, hard_cap_at) WHERE status IN ('queued', 'running');
CREATE INDEX jobs_unsettled ON jobs.jobs (terminal_at) WHERE quota_settlement IS NOT NULL AND quota_settled_at IS NULL;

-- State history for the operator view; never holds numbers.
CREATE TABLE jobs.job_transitions (
  seq bigserial PRIMARY KEY,
  job_id uuid NOT NULL REFERENCES jobs.jobs (id) ON DELETE CASCADE,
  status text NOT NULL,
  at timestamptz NOT NULL DEFAULT now(),
  note text NOT NULL DEFAULT ''
);
CREATE INDEX job_transitions_job ON jobs.job_transitions (job_id, seq);

-- Encrypted input and result: one wrapped data key per blob, the ciphertext in ordered segments.
CREATE TABLE jobs.job_blobs (
  job_id uuid NOT NULL REFERENCES jobs.jobs (id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('input', 'result')),
  kek_id text NOT NULL,
  wrapped_dek bytea NOT NULL,
  segment_count integer NOT NULL,
  byte_length bigint NOT NULL,
  PRIMARY KEY (job_id, kind)
);

CREATE TABLE jobs.job_blob_segments (
  job_id uuid NOT NULL,
  kind text NOT NULL,
  seq integer NOT NULL,
  sealed bytea NOT NULL,
  PRIMARY KEY (job_id, kind, seq),
  FOREIGN KEY (job_id, kind) REFERENCES jobs.job_blobs (job_id, kind) ON DELETE CASCADE
);

-- Retention work: input purge at terminalization, result purge after the result TTL, metadata purge
-- after the metadata TTL. A task stays until its target is verified absent.
CREATE TABLE jobs.cleanup_tasks (
  job_id uuid NOT NULL,
  target text NOT NULL CHECK (target IN ('input', 'result', 'metadata')),
  due_at timestamptz NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  last_error text NOT NULL DEFAULT '',
  PRIMARY KEY (job_id, target)
);
CREATE INDEX cleanup_tasks_due ON jobs.cleanup_tasks (due_at);

-- Down Migration
DROP TABLE jobs.cleanup_tasks;
DROP TABLE jobs.job_blob_segments;
DROP TABLE jobs.job_blobs;
DROP TABLE jobs.job_transitions;
DROP TABLE jobs.jobs;
