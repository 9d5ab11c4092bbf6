// Indexes of idempotency_records.key_mac, built CONCURRENTLY: outside the migration's transaction, so the
// release still serving keeps claiming and finding keys while they are built (a plain CREATE INDEX would
// hold its writes, and an ALTER's lock would hold everything, for as long as the build of a table of tens
// of millions of rows takes). A build cut short (the lock timeout, a killed hook) leaves an invalid index,
// dropped and built again by the next run.
//
// - idempotency_records_key_mac: unique (key_id, key_mac) of the records that have one. What decides
//   between a `transition` process and a `keyed` one claiming the same key at once during an upgrade
//   (src/store/claims.ts). Partial: the older release's records (key_mac NULL) are not in it.
// - idempotency_records_without_mac: the older release's records by age; a `keyed` process asks it
//   whether that release still writes (src/key-form.ts). It empties as the purge removes them.

const INDEXES = [
  {
    name: 'idempotency_records_key_mac',
    create: `CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS idempotency_records_key_mac
      ON admission.idempotency_records (key_id, key_mac) WHERE key_mac IS NOT NULL`,
  },
  {
    name: 'idempotency_records_without_mac',
    create: `CREATE INDEX CONCURRENTLY IF NOT EXISTS idempotency_records_without_mac
      ON admission.idempotency_records (created_at) WHERE key_mac IS NULL`,
  },
];

/** Drops `name` when an earlier build of it was cut short (invalid); a valid one is left as it is. */
const dropInvalid = (name) => `DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
             JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = 'admission' AND c.relname = '${name}' AND NOT i.indisvalid) THEN
    EXECUTE 'DROP INDEX admission.${name}';
  END IF;
END $$`;

export const up = (pgm) => {
  pgm.noTransaction();
  for (const index of INDEXES) {
    pgm.sql(dropInvalid(index.name));
    // Its own statement: CONCURRENTLY cannot run inside DO (a transaction).
    pgm.sql(index.create);
  }
};

export const down = (pgm) => {
  pgm.noTransaction();
  for (const index of INDEXES) pgm.sql(`DROP INDEX CONCURRENTLY IF EXISTS admission.${index.name}`);
};
