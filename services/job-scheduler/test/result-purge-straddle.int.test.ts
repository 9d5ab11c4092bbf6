import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { dropDatabase, uniqueSuffix } from '@dnc/devstack';
import {
  Code,
  ConnectError,
  createPool,
  ensureDatabase,
  migrateSchema,
  type Pool,
  ResultStreams,
} from '@dnc/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyRing } from '../src/crypto/envelope.js';
import { jobsService, type RouteDeps } from '../src/routes.js';
import { CleanupStore } from '../src/store/cleanup.js';
import { JobStore } from '../src/store/jobs.js';

// Found by a review (2026-12-03): a download that began the moment before a result's 7 days ended was
// cut by the purge due at that moment: its segments are read a few at a time as the reader takes them,
// the purge deleted the rest, and the reader got the first megabytes of a document whose Content-Length
// promised more (spec: "A result is always complete"). The result's purge now waits twice a download's
// longest time past its retention, and the scheduler ends a download at that time whatever its caller's
// deadline. The job scheduler's store, routes and cleanup against the real PostgreSQL.
const MIGRATIONS = fileURLToPath(new URL('../migrations', import.meta.url));
const base = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
base.pathname = `/dnc_result_purge_${uniqueSuffix()}`;
const databaseUrl = base.toString();
const keys = KeyRing.parse(`k1:${Buffer.alloc(32, 7).toString('base64')}`, 'k1');
const TTL = 604_800;
let pool: Pool;

beforeAll(async () => {
  await ensureDatabase(databaseUrl);
  await migrateSchema(databaseUrl, 'jobs', MIGRATIONS);
  pool = createPool(databaseUrl, 4);
});
afterAll(async () => {
  await pool?.end();
  await dropDatabase(databaseUrl);
});

const policyOf = (resultStreamMaxMs: number) => ({
  hardCapSeconds: 86_400,
  resultTtlSeconds: TTL,
  metadataTtlSeconds: 2_592_000,
  resultStreamMaxMs,
});

/**
 * A job completed by the worker's own final step (result written, `succeeded`, its retention tasks
 * scheduled), then aged so that its result's retention ends `leftSeconds` from now: its terminal time
 * and its tasks moved back alike. The result is 13 MiB of text, 13 segments: more than the two read batches (4 segments each) a reader
 * has fetched once it holds its first segment.
 */
async function succeededEndingIn(store: JobStore, leftSeconds: number) {
  const jobId = randomUUID();
  const orgId = randomUUID();
  const lease = randomUUID();
  await pool.query(
    `INSERT INTO jobs.jobs (id, org_id, country, status, submitted_count, reservation_id, hard_cap_at,
                            lease_token, lease_expires_at)
     VALUES ($1, $2, 'co', 'running', 1, $3, now() + interval '1 day', $4, now() + interval '1 minute')`,
    [jobId, orgId, randomUUID(), lease],
  );
  const pieces = Array.from({ length: 13 }, () => randomBytes(768 * 1024).toString('base64'));
  const done = await store.complete(jobId, lease, () => pieces);
  expect(done.kind).toBe('succeeded');
  const age = TTL - leftSeconds;
  await pool.query(
    `UPDATE jobs.jobs SET terminal_at = terminal_at - make_interval(secs => $2) WHERE id = $1`,
    [jobId, age],
  );
  await pool.query(
    `UPDATE jobs.cleanup_tasks SET due_at = due_at - make_interval(secs => $2) WHERE job_id = $1`,
    [jobId, age],
  );
  return { job: { jobId, orgId }, body: pieces.join('') };
}

function reader(store: JobStore, job: { jobId: string; orgId: string }) {
  const service = jobsService({
    store,
    keys,
    resultStreams: new ResultStreams(4, 4),
  } as unknown as RouteDeps);
  const stream = service.getJobResult(
    job as never,
    {
      signal: new AbortController().signal,
    } as never,
  ) as AsyncIterable<{ chunk: Uint8Array }>;
  return stream[Symbol.asyncIterator]();
}

/** What the sweeper does on its turn: every due retention task run. */
async function sweepCleanup(): Promise<string[]> {
  const cleanup = new CleanupStore(pool);
  const ran: string[] = [];
  for (const task of await cleanup.due()) {
    await cleanup.run(task);
    ran.push(`${task.jobId}:${task.target}`);
  }
  return ran;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a result download that straddles the end of the retention', () => {
  it('is read whole: the purge due at the end of the 7 days waits for downloads in progress', async () => {
    const store = new JobStore(pool, keys, policyOf(60_000));
    const { job, body } = await succeededEndingIn(store, 2);
    const it = reader(store, job);
    const parts: Buffer[] = [];
    const first = await it.next();
    expect(first.done).toBe(false);
    parts.push(Buffer.from((first.value as { chunk: Uint8Array }).chunk));

    // The retention ends while the reader holds its first megabyte; the sweeper runs.
    await sleep(2_500);
    await sweepCleanup();
    for (let r = await it.next(); !r.done; r = await it.next()) parts.push(Buffer.from(r.value.chunk));
    expect(Buffer.concat(parts).toString()).toBe(body);

    // A read that starts now is refused as the spec says, and the purge is due twice a download's
    // longest time (60 s) after the retention's end.
    const late = reader(store, job);
    await expect(late.next()).rejects.toThrow(/job_result_expired|result/);
    const due = await pool.query(
      `SELECT extract(epoch FROM t.due_at - j.terminal_at)::int AS after
         FROM jobs.cleanup_tasks t JOIN jobs.jobs j ON j.id = t.job_id
        WHERE t.job_id = $1 AND t.target = 'result'`,
      [job.jobId],
    );
    expect(due.rows[0]?.after).toBe(TTL + 120);
  });

  it('the scheduler ends a download at its longest time, whatever the caller waits for', async () => {
    const store = new JobStore(pool, keys, policyOf(300));
    const { job } = await succeededEndingIn(store, 3_600);
    const it = reader(store, job);
    expect((await it.next()).done).toBe(false);
    await sleep(400);
    const next = await it.next().then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(next?.code).toBe(Code.DeadlineExceeded);
  });

  // Found by a review (2026-12-05): the longest download became 15 minutes and the grace past
  // retention 30, but the results stored before were dated 120 s past theirs; a download begun in
  // their last minutes was cut by the purge. The scheduler moves such a purge to the new grace's end
  // when it applies its periods at start, and never moves one dated before the retention's end.
  it('a result stored under a shorter download bound has its purge moved to the new grace', async () => {
    const older = new JobStore(pool, keys, policyOf(60_000));
    const ended = await succeededEndingIn(older, -100);
    const lengthened = await succeededEndingIn(older, 3_600);
    const purgeAfter = async (jobId: string) =>
      (
        await pool.query(
          `SELECT extract(epoch FROM t.due_at - j.terminal_at)::int AS after
             FROM jobs.cleanup_tasks t JOIN jobs.jobs j ON j.id = t.job_id
            WHERE t.job_id = $1 AND t.target = 'result'`,
          [jobId],
        )
      ).rows[0]?.after as number;
    expect(await purgeAfter(ended.job.jobId)).toBe(TTL + 120);

    const now = new JobStore(pool, keys, policyOf(900_000));
    const changed = await now.sweeps.applyRetention();
    expect(changed.graces).toBeGreaterThanOrEqual(2);
    expect(await purgeAfter(ended.job.jobId)).toBe(TTL + 1_800);
    // Its retention ended 100 s ago and its old purge was due 20 s ago: it is still there.
    expect(await sweepCleanup()).not.toContain(`${ended.job.jobId}:result`);
    await expect(reader(now, ended.job).next()).rejects.toThrow(/job_result_expired/);

    // A result TTL lengthened since: its purge, dated before the new retention's end, is not moved.
    const longer = new JobStore(pool, keys, { ...policyOf(900_000), resultTtlSeconds: TTL + 86_400 });
    await longer.sweeps.applyRetention();
    expect(await purgeAfter(lengthened.job.jobId)).toBe(TTL + 1_800);
  });
});
