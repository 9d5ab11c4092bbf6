-- Up Migration
-- When the session's person last proved who they are (the sign-in, or POST /api/session/confirm): an
-- owner's changes that could hand the organization to someone else (an invitation, removing a member,
-- a new API key) need it within the last minutes (session.ts CONFIRMATION_MINUTES), so a session taken
-- from an unlocked computer cannot do them alone. Sessions of earlier releases count from their sign-in.
ALTER TABLE dashboard.sessions ADD COLUMN confirmed_at timestamptz;
UPDATE dashboard.sessions SET confirmed_at = created_at;
ALTER TABLE dashboard.sessions ALTER COLUMN confirmed_at SET DEFAULT now();
ALTER TABLE dashboard.sessions ALTER COLUMN confirmed_at SET NOT NULL;

-- Down Migration
ALTER TABLE dashboard.sessions DROP COLUMN confirmed_at;
