import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { v2 } from '../../services/job-scheduler/test/support/e2e.js';
import { expectInvariants } from '../support/invariants.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';

// A v2 admission whose reservation was released while its idempotency claim stayed in progress: its
// Reserve waited behind a locked quota account past admission's deadline, admission undid it (the
// release landed, leaving quota's tombstone) and PostgreSQL refused to drop the claim (a real trigger,
// as a failing disk would). The retry of the key past the claim timeout resumes the claim. Before the
// fix, resume's Reserve of the old id met the tombstone and every retry answered 503 until the claim
// reconciler gave the admission up; and where quota answered `released` (the caller gave up after its
// reservation was made), resume handed out the old job id with no reservation behind it: a job run and
// never charged (its settlement finds nothing to commit).

/** Admission's v2 claim timeout (the configuration's minimum). */
const JOB_CLAIM_TIMEOUT_S = 6;
/** The gateway's v2 admission budget, shorter than admission's 3 s deadline on quota. */
const GATEWAY_BUDGET_MS = 1_500;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function phones(count: number, offset = 0): string[] {
  return Array.from({ length: count }, (_, i) => `+57300${String(1_000_000 + offset + i).slice(-7)}`);
}

describe('a resumed v2 claim whose reservation is gone is never an uncharged job', () => {
  let stack: TestStack;
  let org: SeededOrg;
  let api: ReturnType<typeof v2>;
  let db: pg.Client;

  beforeAll(async () => {
    stack = await startTestStack({
      label: 'money_resume',
      countries: ['co'],
      env: {
        DNC_JOB_CLAIM_TIMEOUT_SECONDS: String(JOB_CLAIM_TIMEOUT_S),
        DNC_V2_ADMISSION_BUDGET_MS: String(GATEWAY_BUDGET_MS),
        // The claim reconciler stays out of the way: the retry's resume is the path under test.
        DNC_CLAIM_RECONCILE_INTERVAL_MS: '600000',
      },
    });
    org = await seedOrg(stack, ['co'], { quota: 10_000_000 });
    api = v2(stack, () => org);
    await loadRegistry(stack, 'co', ['+573000000001']);
    db = new pg.Client({ connectionString: stack.options.databaseUrl });
    await db.connect();
    // The account row exists once anything was reserved on it (the tests lock it).
    const warm = await api.submit(phones(3, 900_000), { country: 'co' });
    expect(warm.status).toBe(202);
    await api.waitFor(warm.body.job_id, (s) => s === 'succeeded', 60_000);
  });

  afterEach(async () => {
    // job_settled: a succeeded job charged its submitted count once.
    await expectInvariants(stack, { settleMs: 60_000 });
  });

  afterAll(async () => {
    await db?.end();
    if (stack) await stack.teardown();
  });

  /** PostgreSQL refuses to mark idempotency claims accepted (ConfirmJob) until the returned function is called. */
  async function refuseClaimAccepts(): Promise<() => Promise<void>> {
    await db.query(`CREATE FUNCTION admission.refuse_accept() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'accept refused by the test'; END $$`);
    await db.query(`CREATE TRIGGER refuse_accept BEFORE UPDATE ON admission.idempotency_records
      FOR EACH ROW WHEN (NEW.state = 'accepted') EXECUTE FUNCTION admission.refuse_accept()`);
    return async () => {
      await db.query('DROP TRIGGER refuse_accept ON admission.idempotency_records');
      await db.query('DROP FUNCTION admission.refuse_accept()');
    };
  }

  /** PostgreSQL refuses to delete idempotency claims until the returned function is called. */
  async function refuseClaimDrops(): Promise<() => Promise<void>> {
    await db.query(`CREATE FUNCTION admission.refuse_claim_drop() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'claim drop refused by the test'; END $$`);
    await db.query(`CREATE TRIGGER refuse_claim_drop BEFORE DELETE ON admission.idempotency_records
      FOR EACH ROW EXECUTE FUNCTION admission.refuse_claim_drop()`);
    return async () => {
      await db.query('DROP TRIGGER refuse_claim_drop ON admission.idempotency_records');
      await db.query('DROP FUNCTION admission.refuse_claim_drop()');
    };
  }

  async function claimsInProgress(): Promise<number> {
    const r = await db.query(
      "SELECT count(*)::int AS n FROM admission.idempotency_records WHERE kind = 2 AND state = 'in_progress'",
    );
    return r.rows[0].n;
  }

  /**
   * POST the job while its quota account row is locked for `lockMs`, with drops of claims refused:
   * the admission is undone (the gateway or admission gave up), its reservation released, its claim
   * left in progress. Resolves once that is the state.
   */
  async function strandClaim(input: string[], key: string, lockMs: number) {
    const before = await api.quota(org.orgId, 'co');
    const allowDrops = await refuseClaimDrops();
    try {
      const lock = new pg.Client({ connectionString: stack.options.databaseUrl });
      await lock.connect();
      await lock.query('BEGIN');
      await lock.query("SELECT * FROM quota.accounts WHERE org_id = $1 AND country = 'co' FOR UPDATE", [
        org.orgId,
      ]);
      const pending = api.submit(input, { idempotencyKey: key, country: 'co' });
      await sleep(lockMs);
      await lock.query('COMMIT');
      await lock.end();
      expect((await pending).status).toBe(503);
      // The release lands, the drop does not.
      await expect
        .poll(async () => ({ q: await api.quota(org.orgId, 'co'), claims: await claimsInProgress() }), {
          timeout: 15_000,
          interval: 250,
        })
        .toEqual({ q: before, claims: 1 });
    } finally {
      await allowDrops();
    }
  }

  /** Retry the key as a client is told to (409 and 503 with Retry-After) until it has a job. */
  async function retryUntilJob(input: string[], key: string): Promise<string> {
    const until = Date.now() + 60_000;
    for (;;) {
      const r = await api.submit(input, { idempotencyKey: key, country: 'co' });
      if (r.status === 202 || r.status === 200) return r.body.job_id;
      expect([409, 503]).toContain(r.status);
      if (Date.now() > until) throw new Error(`the key never answered a job (last ${r.status})`);
      await sleep(Number(r.headers.get('retry-after') ?? 1) * 1000);
    }
  }

  async function expectChargedOnce(input: string[], key: string, jobId: string, usedBefore: number) {
    const done = await api.waitFor(jobId, (s) => s === 'succeeded' || s === 'failed', 60_000);
    expect(done.body.status).toBe('succeeded');
    // Delivered, so charged: its inputs, once.
    await expect
      .poll(() => api.quota(org.orgId, 'co'), { timeout: 30_000, interval: 250 })
      .toEqual({ used: usedBefore + input.length, reserved: 0 });
    // One job for the key; an exact retry replays it.
    const again = await api.submit(input, { idempotencyKey: key, country: 'co' });
    expect(again.status).toBe(200);
    expect(again.body.job_id).toBe(jobId);
  }

  it('the gateway gave up, the reservation made then released, the claim drop refused: the retry gets a charged job', async () => {
    const { used } = await api.quota(org.orgId, 'co');
    const input = phones(1_000);
    const key = `resume-${randomUUID()}`;
    // Longer than the gateway's budget, shorter than admission's 3 s deadline on quota: the Reserve
    // lands after the caller gave up, and admission releases it (quota: released, same reservation).
    await strandClaim(input, key, GATEWAY_BUDGET_MS + 700);
    await expectChargedOnce(input, key, await retryUntilJob(input, key), used);
  });

  it('the reserve timed out and was undone (a tombstone), the claim drop refused: the retry gets a charged job', async () => {
    const { used } = await api.quota(org.orgId, 'co');
    const input = phones(1_000, 10_000);
    const key = `resume-${randomUUID()}`;
    // Past admission's 3 s deadline on quota: its release leaves a tombstone before the Reserve lands.
    await strandClaim(input, key, 5_000);
    await expectChargedOnce(input, key, await retryUntilJob(input, key), used);
  });

  it('the job exists and its reservation was released (cancelled before its claim was confirmed): the retry replays it, free', async () => {
    const { used } = await api.quota(org.orgId, 'co');
    const input = phones(1_000, 20_000);
    const key = `resume-${randomUUID()}`;
    // ConfirmJob cannot mark the claim accepted (a real trigger) and no worker takes the job: it is
    // stored and stays queued, its claim in progress.
    const allowAccept = await refuseClaimAccepts();
    const worker = stack.child('job-worker')!;
    worker.kill('SIGSTOP');
    let jobId: string;
    try {
      const first = await api.submit(input, { idempotencyKey: key, country: 'co' });
      expect(first.status).toBe(202);
      jobId = first.body.job_id;
      // Cancelled while queued: its reservation released, nothing charged.
      expect([200, 202]).toContain((await api.cancel(jobId)).status);
      await api.waitFor(jobId, (s) => s === 'cancelled', 30_000);
      await expect.poll(() => api.quota(org.orgId, 'co'), { timeout: 30_000 }).toEqual({ used, reserved: 0 });
    } finally {
      worker.kill('SIGCONT');
      await allowAccept();
    }
    expect(await claimsInProgress()).toBe(1);
    await sleep(JOB_CLAIM_TIMEOUT_S * 1000);

    // Past the claim timeout: resume finds the reservation released, the scheduler the job.
    const retry = await api.submit(input, { idempotencyKey: key, country: 'co' });
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotency-replayed')).toBe('true');
    expect(retry.body).toMatchObject({ job_id: jobId, status: 'cancelled' });
    expect(await claimsInProgress()).toBe(0);
    expect(await api.quota(org.orgId, 'co')).toEqual({ used, reserved: 0 });
  });

  // Found by a review (2026-12-03): a retry that resumed its admission found its job stored and was
  // answered as a new job: 202 without Idempotency-Replayed, even for a job that had succeeded. Spec:
  // "200: ScrubJobStatus, returned on an exact retry of a job that is already succeeded ... header
  // Idempotency-Replayed: true".
  it('the job was stored and ran, its claim left in progress: the retry resumes it and is answered as an exact retry', async () => {
    const input = phones(1_000, 30_000);
    const key = `resume-${randomUUID()}`;
    const allowAccept = await refuseClaimAccepts();
    let jobId: string;
    try {
      const first = await api.submit(input, { idempotencyKey: key, country: 'co' });
      expect(first.status).toBe(202);
      jobId = first.body.job_id;
      await api.waitFor(jobId, (s) => s === 'succeeded', 60_000);
    } finally {
      await allowAccept();
    }
    // Settled: its reservation committed.
    await expect.poll(async () => (await api.quota(org.orgId, 'co')).reserved, { timeout: 30_000 }).toBe(0);
    const { used } = await api.quota(org.orgId, 'co');
    expect(await claimsInProgress()).toBe(1);
    await sleep(JOB_CLAIM_TIMEOUT_S * 1000);

    const retry = await api.submit(input, { idempotencyKey: key, country: 'co' });
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotency-replayed')).toBe('true');
    expect(retry.body).toMatchObject({ job_id: jobId, status: 'succeeded' });
    // The resume confirmed the claim; nothing charged again.
    expect(await claimsInProgress()).toBe(0);
    expect(await api.quota(org.orgId, 'co')).toEqual({ used, reserved: 0 });
  });
});
