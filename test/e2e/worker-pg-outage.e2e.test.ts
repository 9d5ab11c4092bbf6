import { TcpProxy } from '@dnc/devstack';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { v2 } from '../../services/job-scheduler/test/support/e2e.js';
import { expectInvariants } from '../support/invariants.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack, uniqueDatabaseUrl } from '../support/stack.js';

// Found by a review (2026-12-04): a queued job's work message is delivered at most max_deliver times. With
// PostgreSQL unreachable from the worker, each delivery failed (the job's size or its claim could not be
// read) and was nak'ed; past the last one JetStream never delivered it again, and the sweeper publishes a
// queued job whose dispatch was confirmed only when its country's queue is empty, which under load it
// rarely is: the job waited for its 24 h hard cap. Here the worker reaches PostgreSQL through a TCP proxy
// that resets every connection for longer than the message's deliveries, and the sweeper's redispatch is
// kept out of the way (an hour), so only the work message itself can bring the job back: the worker keeps
// it on its last delivery and tries the job again until PostgreSQL answers.

const MAX_DELIVER = 2;

describe('PostgreSQL unreachable from the worker for longer than a message’s deliveries', () => {
  let stack: TestStack;
  let pgProxy: TcpProxy;
  let org: SeededOrg;
  let api: ReturnType<typeof v2>;

  beforeAll(async () => {
    const db = new URL(uniqueDatabaseUrl('worker_pg_outage'));
    pgProxy = await TcpProxy.start([{ host: db.hostname, port: Number(db.port || 5432) }]);
    const workerDb = new URL(db);
    workerDb.port = String(pgProxy.port);
    stack = await startTestStack({
      databaseUrl: db.toString(),
      label: 'worker_pg_outage',
      countries: ['co'],
      // NATS with the per-service users of a deployment: the worker may not publish work.
      privateNats: true,
      env: { DNC_JOBS_MAX_DELIVER: String(MAX_DELIVER), DNC_REDISPATCH_AFTER_MS: '3600000' },
      processEnv: { 'job-worker': { DATABASE_URL: workerDb.toString() } },
    });
    org = await seedOrg(stack, ['co']);
    api = v2(stack, () => org);
    await loadRegistry(stack, 'co', ['+573000000001']);
  });

  afterEach(async () => {
    await expectInvariants(stack, { settleMs: 60_000 });
  });

  afterAll(async () => {
    await stack?.teardown();
    await pgProxy?.close();
  });

  it('the queued job keeps a work message through the outage and runs when PostgreSQL is back', async () => {
    const warm = await api.submit(['+573000000001'], { country: 'co' });
    expect(warm.status).toBe(202);
    await api.waitFor(warm.body.job_id, (s) => s === 'succeeded', 60_000);

    pgProxy.setFault({ kind: 'reset' });
    let id = '';
    try {
      const job = await api.submit(['+573000000001', '+573001234567'], { country: 'co' });
      expect(job.status).toBe(202);
      id = job.body.job_id;
      const failedDeliveries = () =>
        stack
          .logsOf('job-worker')
          .split('\n')
          .filter((l) => l.includes(id) && /claim failed|job size unknown/.test(l)).length;
      // More failed deliveries than one message has: the work outlived its first message.
      await expect
        .poll(failedDeliveries, { timeout: 30_000, interval: 200 })
        .toBeGreaterThan(MAX_DELIVER + 1);
    } finally {
      pgProxy.setFault({ kind: 'pass' });
    }
    const done = await api.waitFor(id, (s) => s !== 'queued' && s !== 'running', 60_000);
    expect(done.body.status).toBe('succeeded');
    const result = await api.result(id);
    expect(result.body.summary).toEqual({
      total_checked: 2,
      prohibited_numbers: 1,
      safe_numbers: 1,
      invalid_numbers: 0,
    });
  });
});
