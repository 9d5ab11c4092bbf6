import { TcpProxy } from '@dnc/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { v2 } from '../../services/job-scheduler/test/support/e2e.js';
import { expectInvariants } from '../support/invariants.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { type ProcessName, startTestStack, type TestStack, uniqueDatabaseUrl } from '../support/stack.js';

// Chaos S7, issue 14 items 6 and 7: a worker stopped (SIGSTOP) in the middle of an adapter call, past
// its lease, then continued. Another worker takes the job over and completes it; the stopped one must
// notice that its lease is gone, stop, have its outcome refused and count it
// (dnc_job_stale_completions_total) instead of staying silent. The adapter is reached through a TCP
// proxy that holds every byte (a hung call) until the worker is stopped; the cases of a call that hangs
// in the adapter itself (its session alive) use an operator latency drill instead.

const LEASE_MS = 3_000;
const WORKERS: ProcessName[] = ['job-worker', 'job-worker#2' as ProcessName];

async function metric(stack: TestStack, name: ProcessName, metricName: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${stack.addresses.metrics[name]}/metrics`, {
    signal: AbortSignal.timeout(3_000),
  });
  let sum = 0;
  for (const line of (await res.text()).split('\n'))
    if (line.startsWith(`${metricName} `) || line.startsWith(`${metricName}{`))
      sum += Number(line.split(' ').at(-1));
  return sum;
}

/**
 * Every Check of the mx adapter waits `ms` in the adapter (an operator latency drill) or, with 0, the
 * drill is cleared. A hang in the adapter, not on the path: its HTTP/2 session stays alive and answers
 * PINGs, so only the call's own timeout or the lease ends the call (a path that holds every byte is
 * found dead by the kit's SessionProbe within 2.5 s: packages/kit/test/tls-stall.int.test.ts).
 */
async function adapterHang(stack: TestStack, ms: number): Promise<void> {
  const address = stack.addresses.adapterAdmins['mx']!;
  const how = ms > 0 ? ['--latency-ms', String(ms)] : ['--clear'];
  await stack.admin(['adapter', 'drill', '--country', 'mx', ...how, '--address', address]);
}

describe('a worker stopped mid-call past its lease, then continued', () => {
  let stack: TestStack;
  let proxy: TcpProxy;
  let pgProxy: TcpProxy;
  let org: SeededOrg;
  let api: ReturnType<typeof v2>;

  beforeAll(async () => {
    proxy = await TcpProxy.start([]);
    const db = new URL(uniqueDatabaseUrl('lease_loss'));
    pgProxy = await TcpProxy.start([{ host: db.hostname, port: Number(db.port || 5432) }]);
    const workerDb = new URL(db);
    workerDb.port = String(pgProxy.port);
    const workerEnv = {
      DATABASE_URL: workerDb.toString(),
      DNC_JOB_LEASE_MS: String(LEASE_MS),
      DNC_JOBS_ACK_WAIT_MS: '5000',
      DNC_ADAPTER_CALL_TIMEOUT_MS: '5000',
    };
    stack = await startTestStack({
      databaseUrl: db.toString(),
      label: 'lease_loss',
      countries: ['mx'],
      replicas: { 'job-worker': 2 },
      env: { DNC_SWEEP_INTERVAL_MS: '500', DNC_REDISPATCH_AFTER_MS: '3000' },
      processEnv: {
        'adapter-mx': { DNC_ADVERTISE_ADDR: `http://${proxy.address}` },
        'job-worker': workerEnv,
        ['job-worker#2' as ProcessName]: workerEnv,
      },
    });
    const own = new URL(stack.addresses.adapters['mx']!);
    proxy.setUpstreams([{ host: own.hostname, port: Number(own.port) }]);
    org = await seedOrg(stack, ['mx']);
    await stack.admin(['org', 'set-rate-limit', '--org', org.orgId, '--limit', '60000']);
    api = v2(stack, () => org);
    await loadRegistry(stack, 'mx', ['+525577889900']);
  });

  afterAll(async () => {
    for (const w of WORKERS) stack?.child(w)?.kill('SIGCONT');
    await stack?.teardown();
    await proxy?.close();
    await pgProxy?.close();
  });

  it('an adapter call that hangs past its timeout is retried, not the end of the job', async () => {
    // Issue 14 item 6: a hung dependency ends the call, and the unit is tried again (DNC_ADAPTER_RETRIES,
    // with backoff). The call's own timeout aborted it as Canceled, which is not a retryable code: the
    // job failed at the first hung call (country_service_temporarily_unavailable), no retry made.
    await adapterHang(stack, 60_000);
    let id = '';
    const failed = () =>
      WORKERS.flatMap((w) =>
        stack
          .logsOf(w)
          .split('\n')
          .filter((l) => l.includes('"adapter call failed"') && l.includes(id)),
      );
    try {
      const job = await api.submit(['55 7788 9900']);
      expect(job.status).toBe(202);
      id = job.body.job_id as string;
      // The first call hangs until its 5 s timeout; then the adapter answers again.
      await expect.poll(() => failed().length, { timeout: 30_000, interval: 50 }).toBeGreaterThan(0);
    } finally {
      await adapterHang(stack, 0);
    }
    const done = await api.waitFor(id, (s) => s !== 'queued' && s !== 'running', 60_000);
    expect([done.body.status, done.body.error?.error]).toEqual(['succeeded', undefined]);
    expect((await api.result(id)).body.prohibited_numbers_to_call).toEqual(['55 7788 9900']);
    // The timed-out call is logged as such.
    expect(failed()[0]).toContain('"code":"DeadlineExceeded"');
    await expectInvariants(stack, { canaries: ['7788 9900', '77889900'] });
  });

  it('the stale attempt notices the lost lease, stops, and is refused and counted', async () => {
    const staleBefore = await metric(stack, WORKERS[0]!, 'dnc_job_stale_completions_total');
    const staleBefore2 = await metric(stack, WORKERS[1]!, 'dnc_job_stale_completions_total');
    proxy.setFault({ kind: 'hang' });
    const job = await api.submit(['55 7788 9900', '55 7788 9901']);
    expect(job.status).toBe(202);
    const id = job.body.job_id as string;
    // The worker that started the job, with its adapter call held by the proxy.
    let victim: ProcessName | undefined;
    await expect
      .poll(
        () => {
          victim = WORKERS.find((w) =>
            stack
              .logsOf(w)
              .split('\n')
              .some((l) => l.includes('"adapter call"') && l.includes(id)),
          );
          return victim;
        },
        { timeout: 20_000 },
      )
      .toBeDefined();
    const other = WORKERS.find((w) => w !== victim)!;
    stack.child(victim!)!.kill('SIGSTOP');
    try {
      await new Promise((r) => setTimeout(r, 300));
      // The held call reaches the adapter and its answer waits in the stopped worker's socket.
      proxy.setFault({ kind: 'pass' });
      const done = await api.waitFor(id, (s) => s === 'succeeded' || s === 'failed', 60_000);
      expect(done.body.status).toBe('succeeded');
      // Taken over and completed by the other worker, well past the stopped worker's lease.
      expect(stack.logsOf(other)).toContain(id);
      await new Promise((r) => setTimeout(r, LEASE_MS));
    } finally {
      stack.child(victim!)!.kill('SIGCONT');
    }
    const before = victim === WORKERS[0] ? staleBefore : staleBefore2;
    await expect
      .poll(() => metric(stack, victim!, 'dnc_job_stale_completions_total'), { timeout: 20_000 })
      .toBeGreaterThan(before);
    const result = await api.result(id);
    expect(result.status).toBe(200);
    expect(result.body.prohibited_numbers_to_call).toEqual(['55 7788 9900']);
    await expectInvariants(stack, { canaries: ['7788 9900', '77889900', '7788 9901', '77889901'] });
  });

  it("PostgreSQL reset for longer than the lease while the worker's adapter calls hang: the attempt presumes its lease lost and ends", async () => {
    // The LeaseKeeper's second case (the first is the SIGSTOP above): the process runs, but no renewal
    // of its lease is confirmed because every PostgreSQL connection of the worker is reset, while its
    // adapter calls hang (they need no PostgreSQL). Before the LeaseKeeper the failed renewals were
    // swallowed and the attempt waited for its calls, its lease long gone (here until the 20 s call
    // timeout), free to be taken over meanwhile. Now, a lease after the last confirmed renewal, the
    // attempt is aborted: its calls in flight end, no further call is made, the stale attempt counted.
    const worker = WORKERS[0]!;
    await stack.stop(WORKERS[1]!);
    await stack.stop(worker);
    const p = stack.processes.get(worker)!;
    p.env['DNC_WORKER_UNIT_SIZE'] = '1';
    p.env['DNC_WORKER_UNIT_CONCURRENCY'] = '2';
    p.env['DNC_ADAPTER_CALL_TIMEOUT_MS'] = '20000';
    await stack.start(worker);
    const staleBefore = await metric(stack, worker, 'dnc_job_stale_completions_total');
    await adapterHang(stack, 60_000);
    let id = '';
    try {
      const job = await api.submit(['55 7788 9900', '55 7788 9901', '55 7788 9902']);
      expect(job.status).toBe(202);
      id = job.body.job_id as string;
      const lines = (what: RegExp) =>
        stack
          .logsOf(worker)
          .split('\n')
          .filter((l) => l.includes(id) && l.includes('"attempt":1,') && what.test(l))
          .map((l) => Date.parse((JSON.parse(l) as { time: string }).time));
      await expect.poll(() => lines(/"adapter call"/).length, { timeout: 20_000 }).toBe(2);
      pgProxy.setFault({ kind: 'reset' });
      const resetAt = Date.now();
      // Presumed lost a lease after the last confirmed renewal (at most one renewal interval, 1 s, before
      // the reset), seen at the next tick: within LEASE_MS + 1 s, and 1.5 s more for a loaded machine.
      const deadline = resetAt + LEASE_MS + 2_500;
      const ended =
        /"msg":"(stale attempt[^"]*|job attempt failed; will retry|could not record the attempt[^"]*)"/;
      await expect.poll(() => lines(ended).length, { timeout: 30_000, interval: 200 }).toBeGreaterThan(0);
      expect(lines(ended)[0]! - resetAt, 'the attempt ended, ms after the reset').toBeLessThanOrEqual(
        deadline - resetAt,
      );
      expect(lines(/stale attempt: lease lost/).length).toBeGreaterThan(0);
      expect(await metric(stack, worker, 'dnc_job_stale_completions_total')).toBeGreaterThan(staleBefore);
      // No call of the attempt after it ended (its two calls were made before the reset).
      await new Promise((r) => setTimeout(r, 1_000));
      expect(lines(/"adapter call"/).filter((t) => t > resetAt)).toEqual([]);
      expect(stack.child(worker)!.exitCode).toBeNull();
    } finally {
      pgProxy.setFault({ kind: 'pass' });
      await adapterHang(stack, 0);
    }
    // PostgreSQL back: the job is claimed again (attempt 2) and completes once.
    const done = await api.waitFor(id, (s) => s === 'succeeded' || s === 'failed', 90_000);
    expect(done.body.status).toBe('succeeded');
    expect((await api.result(id)).body.prohibited_numbers_to_call).toEqual(['55 7788 9900']);
    await expectInvariants(stack, { canaries: ['7788 9900', '77889900', '7788 9901', '77889901'] });
  });
});
