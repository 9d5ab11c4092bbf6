import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { dropDatabase, uniqueSuffix } from '@dnc/devstack';
import { createPool, ensureDatabase, migrateSchema, type Pool } from '@dnc/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyRing } from '../src/crypto/envelope.js';
import { JobStore } from '../src/store/jobs.js';

// Found by a review (2026-12-03): the worker's final write judged the 24 h hard cap by `now()`, the time
// its transaction began, then wrote the result (25 MiB take seconds) and ended the job `succeeded` past its
// cap (spec: a job not terminal within 24 hours of admission is `expired`, whatever arrives after). The job
// scheduler's store against the real PostgreSQL, the result's segment writes slowed by a trigger.
const MIGRATIONS = fileURLToPath(new URL('../migrations', import.meta.url));
const base = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
base.pathname = `/dnc_final_cap_${uniqueSuffix()}`;
const databaseUrl = base.toString();
const keys = KeyRing.parse(`k1:${Buffer.alloc(32, 5).toString('base64')}`, 'k1');
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
  await pool.query(`CREATE FUNCTION public.slow_segment() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN PERFORM pg_sleep(2); RETURN NEW; END $$`);
});
afterAll(async () => {
  await pool?.end();
  await dropDatabase(databaseUrl);
});

/** A running job under lease `lease` whose hard cap is `capInMs` from now; its result's writes slowed. */
async function runningJob(capInMs: number) {
  const jobId = randomUUID();
  const lease = randomUUID();
  await pool.query(
    `INSERT INTO jobs.jobs (id, org_id, country, status, submitted_count, reservation_id, hard_cap_at,
                            lease_token, lease_expires_at)
     VALUES ($1, $2, 'co', 'running', 1, $3, clock_timestamp() + make_interval(secs => $4), $5,
             now() + interval '1 minute')`,
    [jobId, randomUUID(), randomUUID(), capInMs / 1000, lease],
  );
  await pool.query(
    `CREATE TRIGGER slow_${jobId.replace(/-/g, '')} BEFORE INSERT ON jobs.job_blob_segments FOR EACH ROW
     WHEN (NEW.job_id = '${jobId}') EXECUTE FUNCTION public.slow_segment()`,
  );
  return { jobId, lease };
}

const blobs = async (jobId: string) =>
  (await pool.query('SELECT count(*)::int AS n FROM jobs.job_blobs WHERE job_id = $1', [jobId])).rows[0].n;

describe("the worker's final write and the hard cap", () => {
  it('a result whose write ends past the cap is discarded: the job is expired, no result kept', async () => {
    const store = new JobStore(pool, keys, policy);
    const { jobId, lease } = await runningJob(1_000);
    const done = await store.complete(jobId, lease, () => ['{"summary":{}}']);
    expect(done.kind).toBe('expired');
    const row = (await pool.query('SELECT status, error FROM jobs.jobs WHERE id = $1', [jobId])).rows[0];
    expect(row).toEqual({ status: 'expired', error: 'job_expired' });
    expect(await blobs(jobId)).toBe(0);
  });

  it('one whose write ends within the cap succeeds', async () => {
    const store = new JobStore(pool, keys, policy);
    const { jobId, lease } = await runningJob(30_000);
    const done = await store.complete(jobId, lease, () => ['{"summary":{}}']);
    expect(done.kind).toBe('succeeded');
    expect(await blobs(jobId)).toBe(1);
  });
});
