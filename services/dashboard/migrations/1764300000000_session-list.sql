-- Up Migration
-- A person's sessions as the Account page lists them: each known by a random id (never its token's hash)
-- and the browser that opened it (its User-Agent, cut to 200 printable characters), so a session one does
-- not recognise can be told apart and ended. Rows of a release that does not know the columns get an id
-- here and an empty browser.
ALTER TABLE dashboard.sessions ADD COLUMN public_id uuid NOT NULL DEFAULT gen_random_uuid();
ALTER TABLE dashboard.sessions ADD COLUMN user_agent text NOT NULL DEFAULT '' CHECK (length(user_agent) <= 200);
CREATE UNIQUE INDEX sessions_public_id ON dashboard.sessions (public_id);

-- Down Migration
DROP INDEX dashboard.sessions_public_id;
ALTER TABLE dashboard.sessions DROP COLUMN user_agent;
ALTER TABLE dashboard.sessions DROP COLUMN public_id;
