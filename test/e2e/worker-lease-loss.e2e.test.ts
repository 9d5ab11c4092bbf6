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
// proxy that holds every byte (a hung call) until the worker is stopped.

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

  it('a PostgreSQL connection reset between adapter calls: the attempt ends, its sibling calls stop, the job completes once', async () => {
    // One number per adapter call, two calls at a time, each call held 250 ms by the proxy.
    for (const w of WORKERS) {
      await stack.stop(w);
      const p = stack.processes.get(w)!;
      p.env['DNC_WORKER_UNIT_SIZE'] = '1';
      p.env['DNC_WORKER_UNIT_CONCURRENCY'] = '2';
    }
    for (const w of WORKERS) await stack.start(w);
    proxy.setFault({ kind: 'slow', delayMs: 250 });
    try {
      const phones = Array.from({ length: 24 }, (_, i) => `55 7788 ${String(9900 + i).padStart(4, '0')}`);
      const job = await api.submit(phones);
      expect(job.status).toBe(202);
      const id = job.body.job_id as string;
      const calls = (w: ProcessName) =>
        stack
          .logsOf(w)
          .split('\n')
          .filter((l) => l.includes('"adapter call"') && l.includes(id));
      let runner: ProcessName | undefined;
      await expect
        .poll(
          () => {
            runner = WORKERS.find((w) => calls(w).length >= 3);
            return runner;
          },
          { timeout: 20_000 },
        )
        .toBeDefined();
      // Every PostgreSQL connection of the workers is reset, and new ones for a moment too.
      pgProxy.setFault({ kind: 'reset' });
      await new Promise((r) => setTimeout(r, 1_500));
      pgProxy.setFault({ kind: 'pass' });
      const done = await api.waitFor(id, (s) => s === 'succeeded' || s === 'failed', 90_000);
      expect(done.body.status).toBe('succeeded');
      // Both workers are still up (no unhandled rejection ended one).
      for (const w of WORKERS) expect(stack.child(w)!.exitCode).toBeNull();
      // The first attempt ended (given back or refused); no call of it was made after that.
      const lines = stack.logsOf(runner!).split('\n');
      const ended = lines.findIndex(
        (l) =>
          l.includes(id) &&
          /"msg":"(job attempt failed; will retry|stale attempt[^"]*|could not record the attempt[^"]*)"/.test(
            l,
          ) &&
          l.includes('"attempt":1'),
      );
      expect(ended).toBeGreaterThan(-1);
      const after = lines
        .slice(ended + 1)
        .filter((l) => l.includes('"adapter call"') && l.includes(id) && l.includes('"attempt":1,'));
      expect(after).toEqual([]);
      expect((await api.result(id)).status).toBe(200);
      await expectInvariants(stack, { canaries: ['7788 9900', '77889900'] });
    } finally {
      proxy.setFault({ kind: 'pass' });
    }
  });
});
