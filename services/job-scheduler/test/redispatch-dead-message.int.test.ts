import { natsNames } from '@dnc/kit';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_NATS_URL } from '../../../test/support/stack.js';
import { type JobsHarness, startJobsHarness, status } from './support/harness.js';

// Found by a review of v2 jobs under faults (2026-12-04): JetStream delivers a work message at most
// `max_deliver` times; a queued job whose message was spent that way (a worker that fetched it and died before
// its claim, deliveries failed while PostgreSQL was out of time, a worker stopped on its last delivery) stays
// `queued` with its dispatch confirmed, and the sweeper published such a job again only when its country's
// queue was empty. Under load it never is: the job waited for its hard cap (24 h) and expired. The sweeper
// now counts the messages its country's consumer still holds against the jobs that need one, and publishes
// the oldest jobs of the difference again.
//
// The fault: the worker is stopped; the test fetches the job's message from the workers' own durable consumer,
// as a worker does, and vanishes without an answer (a worker killed before its claim). With one delivery
// allowed, the message is spent once the ack wait (1 s) lapses. The queue is then kept busy: the mx adapter
// is frozen (SIGSTOP) and a second job submitted, which the restarted worker takes and works on (its message
// held, unanswered, while its call waits); the worker's free slot keeps asking for work, which is when
// the consumer lets the spent message go.
describe('a queued job whose work message was spent is published again under load', () => {
  let h: JobsHarness;

  beforeAll(async () => {
    h = await startJobsHarness({
      label: 'deadmsg',
      registry: ['+525581234567'],
      env: {
        DNC_JOBS_MAX_DELIVER: '1',
        DNC_JOBS_ACK_WAIT_MS: '1000',
        DNC_REDISPATCH_AFTER_MS: '1000',
        DNC_SWEEP_INTERVAL_MS: '300',
      },
    });
    await h.stack.stop('job-worker');
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  const dispatches = async (jobId: string) =>
    (await h.db.query<{ n: number }>('SELECT dispatch_count AS n FROM jobs.jobs WHERE id = $1', [jobId]))
      .rows[0]!.n;

  it('while another job is being worked on, the spent one is published again, and both run once', async () => {
    const spent = await h.submit(['+52 55 8123 4567']);
    const names = natsNames(h.stack.natsPrefix);
    const nc = await connect({ servers: TEST_NATS_URL });
    try {
      const consumer = await jetstream(nc).consumers.get(names.jobsStream, names.jobsConsumer('mx'));
      const msg = await consumer.next({ expires: 5_000 });
      expect(msg && JSON.parse(msg.string()).job_id).toBe(spent.jobId);
    } finally {
      await nc.close();
    }
    const adapter = h.stack.child('adapter-mx')!;
    adapter.kill('SIGSTOP');
    let busy: Awaited<ReturnType<JobsHarness['submit']>>;
    try {
      busy = await h.submit(['+52 33 9876 5432']);
      await h.stack.start('job-worker');
      await h.waitFor(busy.jobId, (j) => j.status === status.RUNNING, 10_000);
      // Before, it stayed at one dispatch for as long as the other job was worked on (here until its calls
      // to the frozen adapter have failed three times, ~5 s, and it has failed).
      await expect.poll(() => dispatches(spent.jobId), { timeout: 4_000, interval: 100 }).toBeGreaterThan(1);
      expect(await dispatches(busy.jobId)).toBe(1);
    } finally {
      adapter.kill('SIGCONT');
    }
    for (const job of [spent, busy]) {
      await h.waitFor(job.jobId, (j) => j.status === status.SUCCEEDED);
      expect((await h.admin.getJobDetail({ jobId: job.jobId })).attempts).toBe(1);
    }
    expect(await h.result(spent.jobId)).toMatchObject({ prohibited_numbers_to_call: ['+52 55 8123 4567'] });
  }, 120_000);
  // The count alone republished the oldest queued job, whose message was live (here held by the test, as a
  // worker waiting for memory holds it); that second message then hid the spent one. JetStream's advisory
  // of the spent message names it: its job is published again at once.
  it('the job whose message was spent is the one published again, not an older one whose message is live', async () => {
    await h.stack.stop('job-worker');
    const live = await h.submit(['+52 55 8123 4567']);
    const spent = await h.submit(['+52 33 9876 5432']);
    const names = natsNames(h.stack.natsPrefix);
    const nc = await connect({ servers: TEST_NATS_URL });
    let keep: NodeJS.Timeout | undefined;
    try {
      const consumer = await jetstream(nc).consumers.get(names.jobsStream, names.jobsConsumer('mx'));
      const held = await consumer.next({ expires: 5_000 });
      expect(held && JSON.parse(held.string()).job_id).toBe(live.jobId);
      keep = setInterval(() => held!.working(), 200);
      const abandoned = await consumer.next({ expires: 5_000 });
      expect(abandoned && JSON.parse(abandoned.string()).job_id).toBe(spent.jobId);
      // Spent once the ack wait lapses; the worker's next request for work lets it go.
      await new Promise((r) => setTimeout(r, 1_500));
      await h.stack.start('job-worker');
      // Before, the older job was published again and the spent one waited for as long as the first
      // message of the older one was held.
      await expect.poll(() => dispatches(spent.jobId), { timeout: 6_000, interval: 100 }).toBeGreaterThan(1);
      await h.waitFor(spent.jobId, (j) => j.status === status.SUCCEEDED);
      expect((await h.admin.getJobDetail({ jobId: spent.jobId })).attempts).toBe(1);
      const heard = h.stack
        .logsOf('job-scheduler')
        .split('\n')
        .filter((l) => l.includes(spent.jobId) && l.includes('work message spent by max_deliver'));
      expect(heard).toHaveLength(1);
      held!.ack();
    } finally {
      clearInterval(keep);
      await nc.close();
    }
  }, 60_000);
  // The fallback: an advisory is not stored, and one sent while no scheduler listens is lost. The spent
  // job is then found by the sweeper's count (the queue holds fewer messages than the jobs needing one)
  // and, being the oldest queued job, published again.
  it('a spent message whose advisory no scheduler heard is found by the count of missing messages', async () => {
    await h.stack.stop('job-worker');
    const spent = await h.submit(['+52 55 8123 4567']);
    const live = await h.submit(['+52 33 9876 5432']);
    const names = natsNames(h.stack.natsPrefix);
    const nc = await connect({ servers: TEST_NATS_URL });
    let keep: NodeJS.Timeout | undefined;
    try {
      const consumer = await jetstream(nc).consumers.get(names.jobsStream, names.jobsConsumer('mx'));
      const abandoned = await consumer.next({ expires: 5_000 });
      expect(abandoned && JSON.parse(abandoned.string()).job_id).toBe(spent.jobId);
      const held = await consumer.next({ expires: 5_000 });
      expect(held && JSON.parse(held.string()).job_id).toBe(live.jobId);
      keep = setInterval(() => held!.working(), 200);
      // No scheduler listens while the spent message is let go (the worker's first request for work).
      await h.stack.stop('job-scheduler');
      await new Promise((r) => setTimeout(r, 1_500));
      await h.stack.start('job-worker');
      await new Promise((r) => setTimeout(r, 2_500));
      expect(await dispatches(spent.jobId)).toBe(1);
      await h.stack.start('job-scheduler');
      // Before (only when the queue was empty), it stayed at one dispatch while the other was held.
      await expect.poll(() => dispatches(spent.jobId), { timeout: 8_000, interval: 100 }).toBeGreaterThan(1);
      await h.waitFor(spent.jobId, (j) => j.status === status.SUCCEEDED);
      expect(await dispatches(live.jobId)).toBe(1);
      const heard = h.stack
        .logsOf('job-scheduler')
        .split('\n')
        .filter((l) => l.includes(spent.jobId) && l.includes('work message spent'));
      expect(heard).toEqual([]);
      held!.ack();
    } finally {
      clearInterval(keep);
      await nc.close();
    }
  }, 60_000);
});
