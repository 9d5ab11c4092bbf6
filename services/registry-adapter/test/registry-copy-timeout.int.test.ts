import { fileURLToPath } from 'node:url';
import { createPool, ensureDatabase, migrateSchema } from '@dnc/kit';
import { NUMBERING_RULES } from '@dnc/numbering';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNormalizer } from '../src/index.js';
import { loadRegistry } from '../src/store/registry-load.js';
import { RegistryStore } from '../src/store/registry-store.js';
import { isolatedEnv } from './support/adapter.js';

// Found by a review (2026-12-03): every pool bounds a query on the client (QUERY_TIMEOUT_MS, 20 s: a
// black-holed connection fails there), and pg arms that timer on COPY streams too, where it is the
// wrong bound: a registry load or a replica's snapshot read is one COPY of 10-30 M keys (13-17 s for
// 10 M measured end to end), so past 20 s the load failed and every replica's snapshot read failed on
// every poll: the country stayed unavailable. Here the pool's client bound is 250 ms, and one COPY each
// way takes longer. (The timer left behind by a finished COPY TO: job-scheduler's copy-timer test.)

const KEYS = 1_000_000;
const MIGRATIONS = fileURLToPath(new URL('../migrations', import.meta.url));

async function* lines(): AsyncGenerator<string[]> {
  for (let start = 0; start < KEYS; start += 50_000) {
    const chunk: string[] = [];
    for (let i = start; i < start + 50_000; i++) chunk.push(`+5255${21_000_000 + i}`);
    yield chunk;
  }
}

describe('registry COPY outlives the pool-wide client query timeout (mx, 1,000,000 keys)', () => {
  const env = isolatedEnv('adapter_copy_timeout');
  const pool = createPool(env.databaseUrl, 4, { queryTimeoutMs: 250 });
  const store = new RegistryStore(pool, 'mx', NUMBERING_RULES);
  /** Another session, with the default bound, to hold a lock. */
  const lockPool = createPool(env.databaseUrl, 1);
  const stray: unknown[] = [];
  const onStray = (e: unknown) => stray.push(e);

  beforeAll(async () => {
    await ensureDatabase(env.databaseUrl);
    await migrateSchema(env.databaseUrl, store.schema, MIGRATIONS);
    pool.on('error', onStray);
  });
  afterAll(async () => {
    pool.off('error', onStray);
    await pool.end();
    await lockPool.end();
    await env.drop();
  });

  it('loads and reads back a registry whose COPY takes longer than the bound; its connections answer afterwards', async () => {
    // One COPY FROM of 1,000,000 keys: longer than 250 ms on any machine this runs on (it failed there
    // with 'Query read timeout' before).
    const loaded = await loadRegistry(store, createNormalizer('mx'), 'replace', lines());
    expect(loaded).toMatchObject({ accepted: KEYS, rejected: 0 });

    // The COPY TO is held past the bound however fast the machine: another session locks the table
    // for 600 ms, and pg's timer counts from the moment the COPY is sent.
    const table = (
      await pool.query('SELECT table_name FROM registry_mx.snapshots WHERE id = $1', [loaded.snapshot.id])
    ).rows[0].table_name as string;
    const locker = await lockPool.connect();
    await locker.query('BEGIN');
    await locker.query(`LOCK TABLE registry_mx.${table} IN ACCESS EXCLUSIVE MODE`);
    const readStarted = Date.now();
    const reading = store.readKeys(loaded.snapshot);
    await new Promise((r) => setTimeout(r, 600));
    await locker.query('COMMIT');
    locker.release();
    const keys = await reading;
    expect(Date.now() - readStarted).toBeGreaterThan(600);
    expect(keys.length).toBe(KEYS);
    expect(keys[0]).toBe(5_521_000_000);
    expect(keys[KEYS - 1]).toBe(5_521_000_000 + KEYS - 1);

    // Past the bound after the read: the pool's connections still answer, and nothing was emitted.
    await new Promise((r) => setTimeout(r, 400));
    for (let i = 0; i < 4; i++) expect((await pool.query('SELECT 1 AS one')).rows[0].one).toBe(1);
    expect(stray).toEqual([]);
  });
});
