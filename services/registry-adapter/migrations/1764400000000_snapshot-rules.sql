-- Up Migration
-- The numbering rules a snapshot's keys were built with (NUMBERING_RULES of @dnc/numbering: the rules
-- revision and the libphonenumber tables). A Check normalizes its inputs with the replica's own rules; a
-- key built by other rules may be another key for the same written number (or missing, for a range the
-- old rules rejected), and the lookup would answer `safe` for a registered number. A replica serves only
-- snapshots stamped with its own rules. NULL: committed before the stamp existed, by rules not recorded:
-- never served (RegistryStore.isOwn); a `replace` load stamps the registry again.
ALTER TABLE snapshots ADD COLUMN numbering_rules text;

-- Down Migration
ALTER TABLE snapshots DROP COLUMN numbering_rules;
