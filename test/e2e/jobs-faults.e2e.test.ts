import { type PrivateServer, privateNats, privatePostgres } from '@dnc/devstack';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { v2 } from '../../services/job-scheduler/test/support/e2e.js';
import { expectInvariants } from '../support/invariants.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';

// Issue 6 tests: a NATS restart during a job and a Postgres restart between jobs. The stack runs on
// its own PostgreSQL and NATS servers so that restarting them disturbs no other suite.

const NEEDLES = ['7788 9900', '77889900', '7788 9901', '77889901', '7788 9902', '77889902'];

describe('v2 jobs survive NATS and PostgreSQL restarts (issue 6)', () => {
  let nats: PrivateServer;
  let postgres: PrivateServer;
  let stack: TestStack;
  let org: SeededOrg;
  let api: ReturnType<typeof v2>;

  beforeAll(async () => {
    nats = await privateNats();
    postgres = await privatePostgres();
    const db = new URL(postgres.url);
    db.pathname = '/dnc_faults';
    stack = await startTestStack({
      label: 'jobs_faults',
      countries: ['mx'],
      natsUrl: nats.url,
      databaseUrl: db.toString(),
      env: { DNC_SWEEP_INTERVAL_MS: '200', DNC_REDISPATCH_AFTER_MS: '3000' },
      processEnv: {
        'job-worker': { DNC_JOB_LEASE_MS: '2000', DNC_JOBS_ACK_WAIT_MS: '3000', DNC_WORKER_UNIT_SIZE: '1' },
      },
    });
    org = await seedOrg(stack, ['mx']);
    await stack.admin(['org', 'set-rate-limit', '--org', org.orgId, '--limit', '60000']);
    api = v2(stack, () => org);
    await loadRegistry(stack, 'mx', ['+525577889900']);
  });

  // After every fault: the stores as the invariant checker reads them (jobs terminal, quota settled,
  // one job per key, no plaintext number anywhere).
  afterEach(async () => {
    await expectInvariants(stack, { canaries: NEEDLES });
  });

  afterAll(async () => {
    if (stack) await stack.close();
    await nats?.stop();
    await postgres?.stop();
  });

  const retry = async <T>(work: () => Promise<T>, ok: (t: T) => boolean, timeoutMs = 30_000): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        const r = await work();
        if (ok(r) || Date.now() > deadline) return r;
      } catch (error) {
        if (Date.now() > deadline) throw error;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  };

  it('NATS restarts while a job runs: the job completes once, and new jobs are dispatched after', async () => {
    const before = await api.quota();
    await stack.admin(['adapter', 'drill', '--country', 'mx', '--latency-ms', '1500']);
    const job = await api.submit(['55 7788 9900', '55 7788 9901', '55 7788 9902']);
    expect(job.status).toBe(202);
    await api.waitFor(job.body.job_id, (s) => s === 'running');
    await nats.restart(1_500);
    await retry(
      () => stack.admin(['adapter', 'drill', '--country', 'mx', '--clear']),
      () => true,
    );
    const done = await api.waitFor(job.body.job_id, (s) => s === 'succeeded', 60_000);
    expect(done.body.status).toBe('succeeded');
    const result = await api.result(job.body.job_id);
    expect(result.body.summary).toEqual({
      total_checked: 3,
      prohibited_numbers: 1,
      safe_numbers: 2,
      invalid_numbers: 0,
    });
    const next = await retry(
      () => api.submit(['55 7788 9901']),
      (r) => r.status === 202,
    );
    expect(next.status).toBe(202);
    await api.waitFor(next.body.job_id, (s) => s === 'succeeded', 60_000);
    await expect.poll(() => api.quota(), { timeout: 10_000 }).toEqual({ used: before.used + 4, reserved: 0 });
  });

  it('PostgreSQL restarts between jobs: the next job is admitted, runs and completes', async () => {
    const first = await api.submit(['55 7788 9900']);
    await api.waitFor(first.body.job_id, (s) => s === 'succeeded');
    const before = await api.quota();
    await postgres.restart(1_000);
    const second = await retry(
      () => api.submit(['55 7788 9902', '55 7788 9900']),
      (r) => r.status === 202,
    );
    expect(second.status).toBe(202);
    await api.waitFor(second.body.job_id, (s) => s === 'succeeded', 60_000);
    expect((await api.result(second.body.job_id)).body.prohibited_numbers_to_call).toEqual(['55 7788 9900']);
    // The first job's result is still readable after the restart.
    expect((await api.result(first.body.job_id)).status).toBe(200);
    await expect.poll(() => api.quota(), { timeout: 10_000 }).toEqual({ used: before.used + 2, reserved: 0 });
  });
});
