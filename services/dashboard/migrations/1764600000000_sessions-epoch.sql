-- Up Migration
-- Bumped each time a person's sessions are all ended (password changed, second factor turned on, sign out
-- everywhere). A sign-in reads it with the member and creates its session only while it is unchanged
-- (sessions.create locks the member row FOR SHARE): a sign-in that was verifying the old password, or
-- decided "no second factor" before it was turned on, cannot leave a session behind the cleanup.
ALTER TABLE dashboard.members ADD COLUMN sessions_epoch bigint NOT NULL DEFAULT 0;

-- Down Migration
ALTER TABLE dashboard.members DROP COLUMN sessions_epoch;
