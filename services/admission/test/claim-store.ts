import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { ensureDatabase, migrateSchema } from '@dnc/kit';
import { afterAll, beforeAll } from 'vitest';
import { dropDatabase, uniqueDatabaseUrl } from '../../../test/support/stack.js';
import { keyNamesOf } from '../src/domain/idempotency.js';
import type { ClaimStore } from '../src/store/index.js';

const MIGRATIONS = fileURLToPath(new URL('../migrations', import.meta.url));

/** A database of its own with admission's schema migrated, dropped after the file's tests. */
export function migratedAdmissionDatabase(name: string, ready?: (databaseUrl: string) => Promise<void>) {
  const databaseUrl = uniqueDatabaseUrl(name);
  beforeAll(async () => {
    await ensureDatabase(databaseUrl);
    await migrateSchema(databaseUrl, 'admission', MIGRATIONS);
    await ready?.(databaseUrl);
  });
  afterAll(async () => {
    await dropDatabase(databaseUrl);
  });
  return databaseUrl;
}

/** A v1 claim of `key` for the API key `keyId`, under a fixed test secret. */
export const claimSync = (store: ClaimStore, keyId: string, key: string) =>
  store.claim(keyId, keyNamesOf('a-secret-of-sixteen+', key), {
    fingerprint: `v1:${'a'.repeat(64)}`,
    kind: 'sync',
    admissionId: randomUUID(),
    jobId: null,
  });
