// Indexes of idempotency_records.key_mac, built CONCURRENTLY: outside the migration's transaction, so the
// release still serving keeps claiming and finding keys while they are built (a plain CREATE INDEX would
// hold its writes, and the ALTER's lock everything, for as long as the build of a table of tens of millions
// of rows takes).
//
// - idempotency_records_key_mac: unique (key_id, key_mac) of the records that have one. What decides
//   between a `transition` process and a `keyed` one claiming the same key at once during an upgrade
//   (src/store/claims.ts). Partial: the older release's records (key_mac NULL) are not in it.
// - idempotency_records_without_mac: the older release's records by age; a process asks it whether that
//   release still writes, and whether any of its records is kept (src/key-form.ts). It empties as the
//   purge removes them.
//
// A concurrent build waits for every transaction older than it, in the whole database: the migration
// connection's lock timeout (10 s, kit db.ts) would cancel it after its scans whenever some other query ran
// longer, so the builds wait as long as it takes (the hook's deadline bounds them; the connection's
// client_connection_check_interval ends a build whose hook was killed). A build cut short leaves an
// invalid index: the next run drops it CONCURRENTLY (a plain DROP would queue every claim behind its lock)
// and builds it again.

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

export const up = async (pgm) => {
  pgm.noTransaction();
  const invalid = await pgm.db.select(
    `SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'admission' AND NOT i.indisvalid AND c.relname IN (${INDEXES.map((x) => `'${x.name}'`).join(', ')})`,
  );
  // Each its own statement: CONCURRENTLY cannot run inside a transaction.
  pgm.sql('SET lock_timeout = 0');
  for (const { name } of invalid) pgm.sql(`DROP INDEX CONCURRENTLY IF EXISTS admission.${name}`);
  for (const index of INDEXES) pgm.sql(index.create);
  pgm.sql('RESET lock_timeout');
};

export const down = (pgm) => {
  pgm.noTransaction();
  for (const index of INDEXES) pgm.sql(`DROP INDEX CONCURRENTLY IF EXISTS admission.${index.name}`);
};
