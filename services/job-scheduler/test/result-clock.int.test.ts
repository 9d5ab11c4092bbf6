import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { dropDatabase, uniqueSuffix } from '@dnc/devstack';
import {
  createPool,
  ensureDatabase,
  inTransaction,
  migrateSchema,
  type Pool,
  ResultStreams,
  readPublicReason,
} from '@dnc/kit';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { KeyRing } from '../src/crypto/envelope.js';
import { jobsService, type RouteDeps } from '../src/routes.js';
import { writeBlob } from '../src/store/blobs.js';
import { JobStore } from '../src/store/jobs.js';

// Found by a review (2026-12-03): whether a result may still be read (7 days after the job succeeded) was
// judged by the scheduler's clock, its purge by the database's. A scheduler whose clock ran behind served
// a result past its retention while the purge was late (the same class as the hard cap read by the process
// clock). The job scheduler's own code against the real PostgreSQL, this process's clock an hour behind.
const MIGRATIONS = fileURLToPath(new URL('../migrations', import.meta.url));
const base = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
base.pathname = `/dnc_result_clock_${uniqueSuffix()}`;
const databaseUrl = base.toString();
const keys = KeyRing.parse(`k1:${Buffer.alloc(32, 9).toString('base64')}`, 'k1');
const policy = {
  hardCapSeconds: 86_400,
  resultTtlSeconds: 604_800,
  metadataTtlSeconds: 2_592_000,
  resultStreamMaxMs: 60_000,
};
let pool: Pool;

beforeAll(async () => {
  await ensureDatabase(databaseUrl);
  await migrateSchema(databaseUrl, 'jobs', MIGRATIONS);
  pool = createPool(databaseUrl, 2);
});
afterEach(() => {
  vi.useRealTimers();
});
afterAll(async () => {
  await pool?.end();
  await dropDatabase(databaseUrl);
});

/** A job that succeeded `agoSeconds` ago (by the database's clock), its result stored and not purged. */
async function succeeded(agoSeconds: number) {
  const jobId = randomUUID();
  const orgId = randomUUID();
  await pool.query(
    `INSERT INTO jobs.jobs (id, org_id, country, status, submitted_count, reservation_id, hard_cap_at,
                            terminal_at)
     VALUES ($1, $2, 'co', 'succeeded', 1, $3, now(), now() - make_interval(secs => $4))`,
    [jobId, orgId, randomUUID(), agoSeconds],
  );
  await inTransaction(pool, (c) => writeBlob(c, keys, { jobId, orgId, kind: 'result' }, ['{"summary":{}}']));
  return { jobId, orgId };
}

async function read(job: { jobId: string; orgId: string }): Promise<string> {
  const service = jobsService({
    store: new JobStore(pool, keys, policy),
    keys,
    resultStreams: new ResultStreams(1, 1),
  } as unknown as RouteDeps);
  try {
    const parts: Buffer[] = [];
    const ctx = { signal: new AbortController().signal };
    for await (const m of service.getJobResult(job as never, ctx as never) as AsyncIterable<{
      chunk: Uint8Array;
    }>)
      parts.push(Buffer.from(m.chunk));
    return Buffer.concat(parts).toString();
  } catch (error) {
    return readPublicReason(error)?.reason ?? String(error);
  }
}

describe("a result's retention is judged by the database's clock", () => {
  it('past 7 days by the database, it is expired even when this process says it is an hour earlier', async () => {
    const old = await succeeded(604_800 + 60);
    const fresh = await succeeded(604_800 - 7_200);
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() - 3_600_000 });
    expect(await read(old)).toBe('job_result_expired');
    expect(await read(fresh)).toBe('{"summary":{}}');
  });
});
