import { fileURLToPath } from 'node:url';
import { dropDatabase, uniqueSuffix } from '@dnc/devstack';
import { createPool, ensureDatabase, migrateSchema, type Pool } from '@dnc/kit';
import type { RetentionPolicy } from '../../src/domain/states.js';

const MIGRATIONS = fileURLToPath(new URL('../../migrations', import.meta.url));

/** The default retention periods: a 24 h hard cap, results 7 days, metadata 30 days. */
export const DEFAULT_POLICY: RetentionPolicy = {
  hardCapSeconds: 86_400,
  resultTtlSeconds: 604_800,
  metadataTtlSeconds: 2_592_000,
  resultStreamMaxMs: 60_000,
};

/** A database of its own with the jobs schema migrated, for tests of the scheduler's store alone. */
export async function scratchJobsDatabase(label: string): Promise<{ pool: Pool; drop(): Promise<void> }> {
  const url = new URL(process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  url.pathname = `/dnc_${label}_${uniqueSuffix()}`;
  const databaseUrl = url.toString();
  await ensureDatabase(databaseUrl);
  await migrateSchema(databaseUrl, 'jobs', MIGRATIONS);
  const pool = createPool(databaseUrl, 2);
  return {
    pool,
    async drop() {
      await pool.end();
      await dropDatabase(databaseUrl).catch(() => {});
    },
  };
}
