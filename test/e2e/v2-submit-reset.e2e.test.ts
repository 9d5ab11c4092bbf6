import { randomUUID } from 'node:crypto';
import { TcpProxy } from '@dnc/devstack';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { v2 } from '../../services/job-scheduler/test/support/e2e.js';
import { expectInvariants } from '../support/invariants.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';

// Found by a review (2026-12-04): the connection between the gateway and the job scheduler reset (RST)
// after the scheduler had stored a job and before its answer arrived (a scheduler killed with streams
// unread, a balancer's or conntrack's reset). connect-node reports ECONNRESET as `Aborted`, which the
// gateway took for a refusal: it undid the admission (reservation released, claim dropped) and answered
// 503, while the stored job ran uncharged; the client's exact retry then made and was charged for a
// second job. Spec: "v2 exact retry returns the same job identity and reserves no further quota". The
// gateway reaches the scheduler here through a TCP proxy that swallows the scheduler's answers and then
// resets the connection once the job's row is committed.

/** Admission's v2 claim timeout (the configuration's minimum): a retry resumes the claim past it. */
const JOB_CLAIM_TIMEOUT_S = 6;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a reset connection to the job scheduler after the job was stored', () => {
  let stack: TestStack;
  let proxy: TcpProxy;
  let org: SeededOrg;
  let api: ReturnType<typeof v2>;
  let db: pg.Client;

  beforeAll(async () => {
    proxy = await TcpProxy.start([]);
    stack = await startTestStack({
      label: 'submit_reset',
      countries: ['co'],
      env: {
        DNC_JOB_CLAIM_TIMEOUT_SECONDS: String(JOB_CLAIM_TIMEOUT_S),
        // The claim reconciler stays out of the way: the retry's resume is the path under test.
        DNC_CLAIM_RECONCILE_INTERVAL_MS: '600000',
      },
      processEnv: { gateway: { DNC_JOBS_ADDR: `http://${proxy.address}` } },
    });
    const jobs = new URL(stack.addresses.jobs);
    proxy.setUpstreams([{ host: jobs.hostname, port: Number(jobs.port) }]);
    org = await seedOrg(stack, ['co'], { quota: 1_000_000 });
    api = v2(stack, () => org);
    await loadRegistry(stack, 'co', ['+573000000001']);
    db = new pg.Client({ connectionString: stack.options.databaseUrl });
    await db.connect();
  });

  afterEach(async () => {
    // job_settled: a succeeded job charged its submitted count once.
    await expectInvariants(stack, { settleMs: 60_000 });
  });

  afterAll(async () => {
    await db?.end();
    await stack?.teardown();
    await proxy?.close();
  });

  const jobsOfOrg = async (): Promise<string[]> =>
    (await db.query('SELECT id FROM jobs.jobs WHERE org_id = $1 ORDER BY created_at', [org.orgId])).rows.map(
      (r) => r.id as string,
    );

  it('the answer is retryable, the claim is kept, and the exact retry returns the stored job, charged once', async () => {
    // The gateway's HTTP/2 session to the scheduler is open (a job through the proxy first).
    const warm = await api.submit(['+573000000001'], { country: 'co' });
    expect(warm.status).toBe(202);
    await api.waitFor(warm.body.job_id, (s) => s === 'succeeded', 60_000);
    await expect.poll(async () => (await api.quota(org.orgId, 'co')).reserved, { timeout: 30_000 }).toBe(0);
    const { used } = await api.quota(org.orgId, 'co');
    const before = await jobsOfOrg();

    const input = ['+573000000001', '+573001234567', '3001112233'];
    const key = `reset-${randomUUID()}`;
    proxy.setFault({ kind: 'mute' });
    let first: Awaited<ReturnType<typeof api.submit>>;
    let stored: string;
    try {
      const pending = api.submit(input, { idempotencyKey: key, country: 'co' });
      // The scheduler committed the job; its answer is held back; the connection is reset.
      await expect
        .poll(async () => (await jobsOfOrg()).length, { timeout: 10_000, interval: 10 })
        .toBe(before.length + 1);
      proxy.resetAll();
      first = await pending;
      stored = (await jobsOfOrg()).at(-1)!;
    } finally {
      proxy.setFault({ kind: 'pass' });
    }
    // Spec: retry 503 with the same idempotency key, honoring Retry-After.
    expect([first.status, first.body.error]).toEqual([503, 'platform_failure']);
    expect(Number(first.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    // The client retries as it is told to (409 in progress and 503, honoring Retry-After).
    const until = Date.now() + (JOB_CLAIM_TIMEOUT_S + 30) * 1000;
    let retry = first;
    while (retry.status !== 202 && retry.status !== 200) {
      expect([409, 503]).toContain(retry.status);
      if (Date.now() > until) throw new Error(`the key never answered a job (last ${retry.status})`);
      await sleep(Number(retry.headers.get('retry-after') ?? 1) * 1000);
      retry = await api.submit(input, { idempotencyKey: key, country: 'co' });
    }
    // The same job (not a second one), answered as an exact retry.
    expect(retry.body.job_id).toBe(stored);
    expect(retry.headers.get('idempotency-replayed')).toBe('true');
    expect(await jobsOfOrg()).toEqual([...before, stored]);
    const done = await api.waitFor(stored, (s) => s === 'succeeded' || s === 'failed', 60_000);
    expect(done.body.status).toBe('succeeded');
    // Delivered, so charged: its inputs, once.
    await expect
      .poll(() => api.quota(org.orgId, 'co'), { timeout: 30_000, interval: 250 })
      .toEqual({ used: used + input.length, reserved: 0 });
  });
});
