import { type PrivateServer, privateNats } from '@dnc/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { v2 } from '../../services/job-scheduler/test/support/e2e.js';
import { expectInvariants } from '../support/invariants.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';

// Issue 14 item 7: the worker's JetStream pull loop (services/job-scheduler/src/worker/worker.ts).
// The stack's own nats-server is frozen with SIGSTOP while a job waits for it: its connections stay
// open and nothing answers, so every pull of the worker fails ("heartbeats missed") for as long as the
// outage lasts. An unguarded loop rejects on the first one and the process dies on the unhandled
// rejection; the guarded loop backs off (0.5 s doubling to 15 s, half of it jittered) and pulls again.
// Nothing is simulated: the worker is its own process, the server a real nats-server.

const OUTAGE_MS = 35_000;
const RETRYING = 'work queue unavailable; retrying';
const NEEDLES = ['7788 9900', '77889900', '7788 9901', '77889901'];

/** The pull loop's pause after its n-th consecutive failure, at least (backoffMs: ceiling/2 to ceiling). */
const minPauseMs = (n: number) => Math.min(15_000, 500 * 2 ** (n - 1)) / 2;

describe('the worker pull loop through a NATS outage (nats-server SIGSTOPped)', () => {
  let nats: PrivateServer;
  let stack: TestStack;
  let org: SeededOrg;
  let api: ReturnType<typeof v2>;

  beforeAll(async () => {
    nats = await privateNats();
    stack = await startTestStack({
      label: 'nats_outage',
      countries: ['mx'],
      natsUrl: nats.url,
      env: { DNC_SWEEP_INTERVAL_MS: '500', DNC_REDISPATCH_AFTER_MS: '3000' },
      // One country, one job at a time: one pull loop, whose log lines can be read in order.
      processEnv: { 'job-worker': { DNC_COUNTRIES: 'mx', DNC_WORKER_JOB_CONCURRENCY: '1' } },
    });
    org = await seedOrg(stack, ['mx']);
    await stack.admin(['org', 'set-rate-limit', '--org', org.orgId, '--limit', '60000']);
    api = v2(stack, () => org);
    await loadRegistry(stack, 'mx', ['+525577889900']);
  });

  afterAll(async () => {
    nats?.signal?.('SIGCONT');
    await stack?.teardown();
    await nats?.stop();
  });

  it('survives, backs off, and runs the job submitted during the outage once NATS is back', async () => {
    const first = await api.submit(['55 7788 9900']);
    expect(first.status).toBe(202);
    await api.waitFor(first.body.job_id, (s) => s === 'succeeded', 60_000);
    const worker = stack.child('job-worker')!;
    const pid = worker.pid;
    const logged = stack.logsOf('job-worker').length;

    nats.signal!('SIGSTOP');
    const stoppedAt = Date.now();
    let job: Awaited<ReturnType<typeof api.submit>>;
    try {
      // A job submitted while NATS is frozen: admitted (the scheduler stores it; its dispatch waits for
      // the sweeper), a 503 retried with the same key as a client would.
      const key = api.key();
      job = await api.submit(['55 7788 9900', '55 7788 9901'], { idempotencyKey: key });
      for (let t = 0; job.status === 503 && t < 10; t++) {
        await new Promise((r) => setTimeout(r, 1_000));
        job = await api.submit(['55 7788 9900', '55 7788 9901'], { idempotencyKey: key });
      }
      expect(job.status).toBe(202);
      while (Date.now() - stoppedAt < OUTAGE_MS) {
        expect(worker.exitCode, stack.logsOf('job-worker').slice(-2_000)).toBeNull();
        expect(worker.signalCode).toBeNull();
        await new Promise((r) => setTimeout(r, 500));
      }
    } finally {
      nats.signal!('SIGCONT');
    }
    const resumedAt = Date.now();

    // The job submitted during the outage ends terminal, run by the same worker process.
    const done = await api.waitFor(job.body.job_id, (s) => s !== 'queued' && s !== 'running', 60_000);
    expect(done.body.status).toBe('succeeded');
    expect(worker.exitCode).toBeNull();
    expect(worker.pid).toBe(pid);
    expect(stack.logsOf('job-worker')).toContain(job.body.job_id);
    const result = await api.result(job.body.job_id);
    expect(result.body.prohibited_numbers_to_call).toEqual(['55 7788 9900']);

    // It backed off: the pull failures of the outage, in order, each after at least the pause the
    // previous one earned (a loaded machine only makes the gaps longer, never shorter). A loop that
    // retried at a fixed pace (1 s, before the backoff: a failure every 3-4 s, eleven in the outage)
    // fails at the sixth gap, which must be at least 7.5 s; without the guard the worker exits on the
    // first failed pull (unhandled rejection).
    const retries = stack
      .logsOf('job-worker')
      .slice(logged)
      .split('\n')
      .filter((l) => l.includes(`"msg":"${RETRYING}"`))
      .map((l) => Date.parse((JSON.parse(l) as { time: string }).time))
      .filter((t) => t < resumedAt);
    console.log(
      `pull failures during the outage: gaps ${retries
        .slice(1)
        .map((t, i) => t - retries[i]!)
        .join(', ')} ms`,
    );
    expect(retries.length, `${retries.length} pull failures during the outage`).toBeGreaterThanOrEqual(6);
    for (let n = 1; n < retries.length; n++)
      expect(retries[n]! - retries[n - 1]!, `gap after failure ${n}`).toBeGreaterThanOrEqual(minPauseMs(n));
    // And never more than the cap: a pull is tried again within 15 s (+ one pull of 2 s, + load).
    for (let n = 1; n < retries.length; n++) expect(retries[n]! - retries[n - 1]!).toBeLessThan(25_000);
    // Back to work within the cap after NATS returned.
    expect(Date.now() - resumedAt).toBeLessThan(60_000);
    await expectInvariants(stack, { canaries: NEEDLES });
  });
});
