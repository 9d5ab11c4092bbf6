-- Up Migration
-- The customer dashboard's own data: people, invitations, sessions, sign-in lockouts and each
-- organization's audit log. Organizations, keys, purchases, quota and jobs are not here: the dashboard
-- reads them through the organization-scoped methods of admission, quota and the job scheduler.

-- A person belongs to one organization; the email identifies them at sign-in (lowercased, unique).
CREATE TABLE dashboard.members (
  member_id uuid PRIMARY KEY,
  org_id uuid NOT NULL,
  email text NOT NULL UNIQUE,
  role text NOT NULL CHECK (role IN ('owner', 'member')),
  -- scrypt, with its parameters: see services/dashboard/src/domain/password.ts
  password_hash text NOT NULL,
  -- RFC 6238 second factor (base32 secret) once enabled; the pending one while it is being set up.
  totp_secret text,
  totp_pending_secret text,
  -- The last time step a code was accepted for: a code is never accepted twice.
  totp_last_step bigint,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_sign_in_at timestamptz
);
CREATE INDEX members_org ON dashboard.members (org_id, created_at);

-- A one-time link: only the SHA-256 of its token is kept.
CREATE TABLE dashboard.invitations (
  invitation_id uuid PRIMARY KEY,
  org_id uuid NOT NULL,
  email text NOT NULL,
  role text NOT NULL CHECK (role IN ('owner', 'member')),
  token_hash bytea NOT NULL UNIQUE,
  -- The member who invited; NULL for the operator (`dnc-admin user invite`).
  invited_by uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  accepted_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX invitations_org ON dashboard.invitations (org_id, created_at DESC);

-- Server-side sessions: the cookie holds a random token, the table its SHA-256. `stage` is 'mfa'
-- between a correct password and a correct second factor; only 'full' sessions see anything.
CREATE TABLE dashboard.sessions (
  token_hash bytea PRIMARY KEY,
  member_id uuid NOT NULL REFERENCES dashboard.members (member_id) ON DELETE CASCADE,
  org_id uuid NOT NULL,
  stage text NOT NULL CHECK (stage IN ('mfa', 'full')),
  csrf_token text NOT NULL,
  mfa_failures integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX sessions_member ON dashboard.sessions (member_id);
CREATE INDEX sessions_expiry ON dashboard.sessions (expires_at);

-- Failed sign-ins per email, known or not (so a lockout says nothing about which emails exist).
CREATE TABLE dashboard.sign_in_failures (
  email text PRIMARY KEY,
  failures integer NOT NULL,
  last_failure_at timestamptz,
  locked_until timestamptz
);

-- An organization's own audit log: who did what, when. `actor` is the member's email at the time, or
-- 'operator'.
CREATE TABLE dashboard.audit_events (
  event_id bigserial PRIMARY KEY,
  org_id uuid NOT NULL,
  at timestamptz NOT NULL DEFAULT now(),
  actor text NOT NULL,
  action text NOT NULL,
  target text NOT NULL DEFAULT ''
);
CREATE INDEX audit_events_org ON dashboard.audit_events (org_id, event_id DESC);

-- Down Migration
DROP TABLE dashboard.audit_events;
DROP TABLE dashboard.sign_in_failures;
DROP TABLE dashboard.sessions;
DROP TABLE dashboard.invitations;
DROP TABLE dashboard.members;
