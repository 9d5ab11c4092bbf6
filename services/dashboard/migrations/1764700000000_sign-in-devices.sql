-- Up Migration
-- Browsers that signed in as a member (device cookies, OWASP "Slow Down Online Guessing Attacks with
-- Device Cookies"). The cookie holds a random token, this table its SHA-256. A browser that presents the
-- token of the member whose email it signs in with has its failures counted here, apart from the email's
-- (dashboard.sign_in_failures): anyone may lock an email by typing wrong passwords for it, and that lock
-- no longer keeps the member's own browsers out, e.g. an owner who must revoke a leaked key.
CREATE TABLE dashboard.sign_in_devices (
  token_hash bytea PRIMARY KEY,
  member_id uuid NOT NULL REFERENCES dashboard.members (member_id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  failures integer NOT NULL DEFAULT 0,
  last_failure_at timestamptz,
  locked_until timestamptz
);
CREATE INDEX sign_in_devices_member ON dashboard.sign_in_devices (member_id, expires_at DESC);
CREATE INDEX sign_in_devices_expiry ON dashboard.sign_in_devices (expires_at);

-- Down Migration
DROP TABLE dashboard.sign_in_devices;
