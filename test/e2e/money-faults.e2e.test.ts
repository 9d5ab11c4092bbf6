import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { v2 } from '../../services/job-scheduler/test/support/e2e.js';
import { expectInvariants } from '../support/invariants.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';

// Issue 14 items 1 and 2: every v2 reservation ends in commit or release within a bound, and a SubmitJob
// whose outcome was lost is resolved (never guessed): one job per key, charged once. The faults are
// real: a quota account row locked by a second PostgreSQL connection, the job-scheduler SIGSTOPped.

/** Admission's claim timeout for v2 (the minimum the configuration allows) and its reconciler period. */
const JOB_CLAIM_TIMEOUT_S = 6;
const RECONCILE_MS = 1_000;

/** Colombian mobiles in E.164, distinct and deterministic. */
function phones(count: number, offset = 0): string[] {
  return Array.from(
    { length: count },
    (_, i) => `+57${i % 2 ? '320' : '300'}${String(10_000_000 + offset + i).slice(-7)}`,
  );
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('no v2 admission left unresolved (issue 14 items 1, 2)', () => {
  let stack: TestStack;
  let org: SeededOrg;
  let api: ReturnType<typeof v2>;
  let db: pg.Client;

  beforeAll(async () => {
    stack = await startTestStack({
      label: 'money_faults',
      countries: ['co'],
      env: {
        DNC_JOB_CLAIM_TIMEOUT_SECONDS: String(JOB_CLAIM_TIMEOUT_S),
        DNC_CLAIM_RECONCILE_INTERVAL_MS: String(RECONCILE_MS),
      },
    });
    org = await seedOrg(stack, ['co'], { quota: 10_000_000 });
    api = v2(stack, () => org);
    await stack.admin(['org', 'set-rate-limit', '--org', org.orgId, '--limit', '60000']);
    await loadRegistry(stack, 'co', ['+573000000001']);
    db = new pg.Client({ connectionString: stack.options.databaseUrl });
    await db.connect();
  });

  afterEach(async () => {
    await expectInvariants(stack, { settleMs: 60_000 });
  });

  afterAll(async () => {
    await db?.end();
    if (stack) await stack.teardown();
  });

  async function jobClaimsInProgress(): Promise<number> {
    const r = await db.query(
      "SELECT count(*)::int AS n FROM admission.idempotency_records WHERE kind = 2 AND state = 'in_progress'",
    );
    return r.rows[0].n;
  }

  /**
   * POST /v2/scrub with the scheduler SIGSTOPped mid-submit, SIGCONT after 6 s (the gateway's 5 s
   * budget runs out meanwhile). The scheduler is pinned inside its submit transaction (job row written,
   * not committed) so that the SIGSTOP lands mid-submit: its job_transitions insert waits for a lock
   * this test holds until the process is stopped.
   */
  async function submitWhileSchedulerStopped(input: string[], key: string) {
    const lock = new pg.Client({ connectionString: stack.options.databaseUrl });
    await lock.connect();
    await lock.query('BEGIN');
    await lock.query('LOCK TABLE jobs.job_transitions IN SHARE MODE');
    const first = api.submit(input, { idempotencyKey: key, country: 'co' });
    const until = Date.now() + 20_000;
    for (;;) {
      const waiting = await db.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO jobs.job_transitions%'`,
      );
      if (waiting.rows[0].n > 0) break;
      if (Date.now() > until) throw new Error('the submit never reached the scheduler');
      await sleep(20);
    }
    const scheduler = stack.child('job-scheduler')!;
    scheduler.kill('SIGSTOP');
    await lock.query('COMMIT');
    await lock.end();
    await sleep(6_000);
    scheduler.kill('SIGCONT');
    return first;
  }

  it('item 1: Admit stuck behind a locked quota account past the 5 s budget, never retried: reserved back to 0 within the bound', async () => {
    // The account row exists once anything was reserved on it.
    const warm = await api.submit(phones(3, 900_000), { country: 'co' });
    expect(warm.status).toBe(202);
    await api.waitFor(warm.body.job_id, (s) => s === 'succeeded', 60_000);
    const before = await api.quota(org.orgId, 'co');
    expect(before.reserved).toBe(0);

    const lock = new pg.Client({ connectionString: stack.options.databaseUrl });
    await lock.connect();
    await lock.query('BEGIN');
    await lock.query("SELECT * FROM quota.accounts WHERE org_id = $1 AND country = 'co' FOR UPDATE", [
      org.orgId,
    ]);
    const pending = api.submit(phones(1_000, 100_000), { country: 'co' });
    await sleep(6_000);
    await lock.query('COMMIT');
    await lock.end();
    const answer = await pending;
    expect(answer.status).toBe(503);
    const answeredAt = Date.now();

    // Never retried. Bound: the v2 claim timeout plus one reconciler period (plus a loaded machine).
    await expect
      .poll(async () => ({ q: await api.quota(org.orgId, 'co'), claims: await jobClaimsInProgress() }), {
        timeout: (JOB_CLAIM_TIMEOUT_S + 10) * 1000,
        interval: 250,
      })
      .toEqual({ q: before, claims: 0 });
    console.log(`item 1: reservation resolved ${Date.now() - answeredAt} ms after the 503`);
    const jobs = await db.query('SELECT count(*)::int AS n FROM jobs.jobs WHERE org_id = $1', [org.orgId]);
    expect(jobs.rows[0].n).toBe(1);
  });

  it('item 2: the scheduler SIGSTOPped mid-submit of 200,000 numbers, SIGCONT after 6 s: one job for the key, charged once', async () => {
    const input = phones(200_000);
    const key = `money-${randomUUID()}`;
    const before = await api.quota(org.orgId, 'co');

    const first = await submitWhileSchedulerStopped(input, key);
    expect(first.status).toBe(503);

    // The client retries with the same key, as told (409 while the admission is in progress).
    const ids = new Set<string>();
    for (let attempt = 0; attempt < 2; attempt++) {
      const retryUntil = Date.now() + 60_000;
      for (;;) {
        const r = await api.submit(input, { idempotencyKey: key, country: 'co' });
        if (r.status === 202 || r.status === 200) {
          ids.add(r.body.job_id);
          break;
        }
        expect([409, 503]).toContain(r.status);
        if (Date.now() > retryUntil) throw new Error(`the key never answered a job (last ${r.status})`);
        await sleep(Number(r.headers.get('retry-after') ?? 1) * 1000);
      }
    }
    expect(ids.size).toBe(1);
    const [jobId] = [...ids];
    const done = await api.waitFor(jobId!, (s) => s === 'succeeded' || s === 'failed', 120_000);
    expect(done.body.status).toBe('succeeded');
    const jobs = await db.query(
      'SELECT count(*)::int AS n FROM jobs.jobs WHERE org_id = $1 AND submitted_count = 200000',
      [org.orgId],
    );
    expect(jobs.rows[0].n).toBe(1);
    await expect
      .poll(() => api.quota(org.orgId, 'co'), { timeout: 30_000 })
      .toEqual({ used: before.used + 200_000, reserved: 0 });
  });

  // The scheduler's submit resumed 6 s later, past the gateway's budget: before 2026-12-05 it stored the
  // job then, and the claim reconciler confirmed it: a job run and charged after its request was answered
  // 503 (spec: a platform failure "consumes no customer quota"). A new job is now stored only while its
  // answer can still reach the gateway (SubmitJobRequest.deadline_unix_ms): nothing is stored, and the
  // reconciler fences the id and releases the reservation.
  it('item 2, never retried: the submit that resumes past the deadline stores nothing; the reservation is released', async () => {
    const input = phones(200_000, 300_000);
    const key = `money-${randomUUID()}`;
    const before = await api.quota(org.orgId, 'co');
    // The test before made a job of as many numbers for this organization: only a newer one is this key's.
    const startedAt = new Date();
    const first = await submitWhileSchedulerStopped(input, key);
    expect(first.status).toBe(503);
    const answeredAt = Date.now();
    // Bound: the v2 claim timeout plus one reconciler period (plus a loaded machine).
    await expect
      .poll(async () => ({ q: await api.quota(org.orgId, 'co'), claims: await jobClaimsInProgress() }), {
        timeout: (JOB_CLAIM_TIMEOUT_S + 15) * 1000,
        interval: 250,
      })
      .toEqual({ q: before, claims: 0 });
    console.log(`item 2: unconfirmed job claim resolved ${Date.now() - answeredAt} ms after the 503`);
    const stored = await db.query(
      'SELECT count(*)::int AS n FROM jobs.jobs WHERE org_id = $1 AND submitted_count = $2 AND created_at >= $3',
      [org.orgId, input.length, startedAt],
    );
    expect(stored.rows[0].n).toBe(0);
    // The key is free again: a retry now is a new admission, run and charged once.
    const retried = await api.submit(input, { idempotencyKey: key, country: 'co' });
    expect(retried.status).toBe(202);
    await api.waitFor(retried.body.job_id, (st) => st === 'succeeded', 120_000);
    await expect
      .poll(() => api.quota(org.orgId, 'co'), { timeout: 120_000, interval: 500 })
      .toEqual({ used: before.used + 200_000, reserved: 0 });
  });
});
