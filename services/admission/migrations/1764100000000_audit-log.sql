-- Up Migration
-- The append-only audit log of the administrative calls this service served (kit security/audit.ts):
-- who (identity and certificate subject), when, which method, the target ids (never secrets, numbers or
-- payloads) and the outcome; one row when a call starts and one when it ends. Nothing may change or
-- remove a row: the triggers below refuse UPDATE, DELETE and TRUNCATE, even to this service's own user.
-- These statements run with the service's schema on the search path.
CREATE TABLE audit_log (
  id bigserial PRIMARY KEY,
  at timestamptz NOT NULL DEFAULT clock_timestamp(),
  caller text NOT NULL,
  subject text NOT NULL DEFAULT '',
  method text NOT NULL,
  targets jsonb NOT NULL DEFAULT '{}',
  outcome text NOT NULL,
  call_id uuid NOT NULL
);

CREATE INDEX audit_log_at ON audit_log (at);

CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_log is append-only';
END
$$;

CREATE TRIGGER audit_log_no_change BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();

-- Down Migration
DROP TABLE audit_log;
DROP FUNCTION audit_log_append_only();
