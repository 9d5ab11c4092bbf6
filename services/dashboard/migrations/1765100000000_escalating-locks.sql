-- Up Migration
-- Found by a review (2026-12-05): a lock started the failure count again from nothing, so an attacker had
-- the limit's worth of guesses every lock period for ever. `locks` is how many locks the current run of
-- failures (of an email, or of a trusted browser) has had: each further one lasts twice as long, up to a
-- day, until a success or a quiet day ends the run (src/store/members.ts `failureSet`). A lock that ended
-- within the last day counts as the first of its run, as it would have under the new rule.
ALTER TABLE dashboard.sign_in_failures ADD COLUMN locks integer NOT NULL DEFAULT 0;
ALTER TABLE dashboard.sign_in_devices ADD COLUMN locks integer NOT NULL DEFAULT 0;
UPDATE dashboard.sign_in_failures SET locks = 1 WHERE locked_until > now() - interval '24 hours';
UPDATE dashboard.sign_in_devices SET locks = 1 WHERE locked_until > now() - interval '24 hours';

-- Down Migration
ALTER TABLE dashboard.sign_in_devices DROP COLUMN locks;
ALTER TABLE dashboard.sign_in_failures DROP COLUMN locks;
