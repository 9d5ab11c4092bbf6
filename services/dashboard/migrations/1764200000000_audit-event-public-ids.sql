-- Up Migration
-- An audit event's identity as the organization sees it: a random UUID. `event_id` comes from one sequence
-- shared by every organization, so showing it (as the event's id and the page cursor) told a customer how
-- many events other organizations had between two of its own. It stays the order and the primary key,
-- inside this schema only. Rows written by a release that does not know the column get their id here.
ALTER TABLE dashboard.audit_events ADD COLUMN public_id uuid NOT NULL DEFAULT gen_random_uuid();
CREATE UNIQUE INDEX audit_events_public_id ON dashboard.audit_events (public_id);

-- Down Migration
DROP INDEX dashboard.audit_events_public_id;
ALTER TABLE dashboard.audit_events DROP COLUMN public_id;
