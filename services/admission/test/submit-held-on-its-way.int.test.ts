import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { TcpProxy } from '@dnc/devstack';
import { grpcTransport, ORG_ASSERTION_HEADER } from '@dnc/kit';
import { admissionv1, jobsv1 } from '@dnc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_NATS_URL } from '../../../test/support/stack.js';
import { admitReq, Harness } from './harness.js';

// Found by a review (2026-12-05): the gateway's SubmitJob carried its deadline as a relative time, which
// counts from the call's arrival. Held on its way past the gateway's deadline, it was answered 503
// `platform_failure` (outcome unknown), and the SubmitJob, delivered later, stored the job anyway: it ran
// and its settlement charged the customer, who had been told the request failed and may never retry
// (spec: a platform failure "consumes no customer quota"). A new job is now stored only while its
// answer can still reach the caller; refused, nothing is stored and the claim reconciler fences the id.
const h = new Harness();
let proxy: TcpProxy;
/** Between the scheduler and NATS. */
let toNats: TcpProxy;

beforeAll(async () => {
  const nats = new URL(TEST_NATS_URL);
  toNats = await TcpProxy.start([{ host: nats.hostname, port: Number(nats.port || 4222) }]);
  await h.start({}, undefined, {
    scheduler: true,
    schedulerEnv: { NATS_URL: `nats://${toNats.address}` },
  });
  await h.adapter('mx');
  proxy = await TcpProxy.start([{ host: '127.0.0.1', port: h.scheduler!.port }]);
}, 60_000);

afterAll(async () => {
  await proxy?.close();
  await h.stop();
  await toNats?.close();
});

describe('a SubmitJob held on its way', () => {
  const submitter = async () => {
    const c = await h.customer(['mx']);
    const jobs = createClient(
      jobsv1.JobsService,
      grpcTransport(`http://${proxy.address}`, [], {
        security: await h.pki.security('gateway'),
        peer: 'job-scheduler',
      }),
    );
    const headers = { [ORG_ASSERTION_HEADER]: h.assertions.issue(c.orgId, 'gateway', ['job-scheduler']) };
    return async (timeoutMs: number) => {
      const admitted = await h
        .clients(0)
        .admission.admit(admitReq(c, { kind: admissionv1.RequestKind.JOB, inputCount: 3 }));
      const request = {
        jobId: admitted.jobId,
        orgId: c.orgId,
        reservationId: admitted.admissionId,
        country: 'mx',
        canonicalPhones: new TextEncoder().encode(JSON.stringify(['5581234567', '5581234568', '5581234569'])),
        deadlineUnixMs: BigInt(Date.now() + timeoutMs),
      };
      return { admitted, answer: jobs.submitJob(request, { timeoutMs, headers }) };
    };
  };
  const stored = async (jobId: string) =>
    (await h.sql('SELECT count(*)::int AS n FROM jobs.jobs WHERE id = $1', [jobId])).rows[0].n as number;

  it('stores no job once its caller has stopped waiting', async () => {
    const submit = await submitter();
    // Through the proxy while it passes: stored, and the connection the next one takes is open.
    const first = await submit(5_000);
    await first.answer;
    expect(await stored(first.admitted.jobId)).toBe(1);

    // Held 1.5 s, then delivered: its caller gave up at 1 s, as the gateway does before answering 503.
    proxy.setFault({ kind: 'hang' });
    const held = setTimeout(() => proxy.setFault({ kind: 'pass' }), 1_500);
    try {
      const late = await submit(1_000);
      const error = await late.answer.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ConnectError);
      expect((error as ConnectError).code).toBe(Code.DeadlineExceeded);
      await new Promise((r) => setTimeout(r, 2_000));
      expect(await stored(late.admitted.jobId)).toBe(0);
    } finally {
      clearTimeout(held);
      proxy.setFault({ kind: 'pass' });
    }
  });

  // Found by a review of the fix (2026-12-05): the answer waited for the job's publish to JetStream (up to
  // 2 s), so with NATS failing over a job stored in time was answered after its caller's deadline: 503,
  // then the job ran and was charged. The job is now answered once stored; the sweeper publishes it.
  it('is answered once stored, whether or not JetStream confirms its publish', async () => {
    const submit = await submitter();
    await (await submit(5_000)).answer;
    toNats.setFault({ kind: 'hang' });
    try {
      const started = Date.now();
      const job = await submit(1_000);
      await expect(job.answer).resolves.toMatchObject({ job: { jobId: job.admitted.jobId } });
      expect(Date.now() - started).toBeLessThan(1_000);
      expect(await stored(job.admitted.jobId)).toBe(1);
    } finally {
      toNats.setFault({ kind: 'pass' });
    }
  });
});
