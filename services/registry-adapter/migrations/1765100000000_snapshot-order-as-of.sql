-- Up Migration
-- The time a snapshot's loads are put in order against: the latest as_of of the loads it is made of since
-- its last replace, removals included. A removal no longer dates the copy (`as_of`: the registrations it
-- holds are no fresher), but two removals must still keep their order: a removal dated before one already
-- applied is refused unless meant (found by a review, 2026-12-05). NULL: the snapshot's as_of, else its
-- commit time (snapshots of earlier releases, whose removals dated the copy).
ALTER TABLE snapshots ADD COLUMN IF NOT EXISTS order_as_of timestamptz;

-- Down Migration
ALTER TABLE snapshots DROP COLUMN order_as_of;
