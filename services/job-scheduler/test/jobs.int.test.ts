import { randomUUID } from 'node:crypto';
import { registryv1 } from '@dnc/proto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { expectInvariants } from '../../../test/support/invariants.js';
import { TEST_NATS_URL } from '../../../test/support/stack.js';
import {
  type JobsHarness,
  plaintextInDatabase,
  reason,
  startJobsHarness,
  status,
  waitAdapterServing,
} from './support/harness.js';

// Distinctive numbers: searched for afterwards in Postgres and in every process's logs.
const LISTED = ['+52 55 8123 4567', '55 8123 4568'];
const NOT_LISTED = ['+52 33 9876 5432'];
const NEEDLES = [
  '8123 4567',
  '81234567',
  '81234568',
  '98765432',
  '9876 5432',
  '8888 1111',
  '88881111',
  '8888 2222',
];

describe('job scheduler through its gRPC API (real quota, adapter, Postgres, NATS; separate processes)', () => {
  let h: JobsHarness;

  beforeAll(async () => {
    h = await startJobsHarness({
      registry: ['+525581234567', '+525581234568'],
      env: {
        DNC_SWEEP_INTERVAL_MS: '200',
        DNC_ADAPTER_RETRIES: '1',
        DNC_LOG_LEVEL: 'info',
        DNC_REDISPATCH_AFTER_MS: '2000',
      },
      processEnv: {
        'job-worker': { DNC_WORKER_UNIT_SIZE: '2', DNC_JOB_LEASE_MS: '2000', DNC_JOBS_ACK_WAIT_MS: '3000' },
      },
    });
  }, 120_000);

  // After every test (kills, lost messages, storage failures): the invariant checker over the stores.
  afterEach(async () => {
    await expectInvariants(h.stack, { canaries: NEEDLES });
  });

  afterAll(async () => {
    await h?.close();
  });

  it('a job runs to succeeded; the result has the v1 model; quota is committed once', async () => {
    const phones = [...LISTED, ...NOT_LISTED, 'not a number', LISTED[0]!];
    const before = await h.reserved();
    const accepted = await h.submit(phones);
    expect(accepted.status).toBe(status.QUEUED);
    expect(accepted.jobId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const done = await h.waitFor(accepted.jobId, (j) => j.status === status.SUCCEEDED);
    expect(done.error).toBeUndefined();
    // expires_at = terminalization + 7 days
    const expires = Number(done.expiresAt!.seconds) * 1000;
    expect(expires - Date.now()).toBeGreaterThan(604_800_000 - 60_000);
    const result = await h.result(accepted.jobId);
    expect(result).toEqual({
      prohibited_numbers_to_call: [LISTED[0], LISTED[1], LISTED[0]],
      safe_numbers_to_call: NOT_LISTED,
      invalid_numbers: [{ input: 'not a number', reason: 'unparseable' }],
      summary: { total_checked: 5, prohibited_numbers: 3, safe_numbers: 1, invalid_numbers: 1 },
    });
    await expect.poll(() => h.reserved(), { timeout: 5_000 }).toEqual({ used: before.used + 5, reserved: 0 });
    // Idempotent submit: the same job identity, nothing stored twice, no second reservation needed.
    const again = await h.jobs.submitJob({
      jobId: accepted.jobId,
      orgId: h.org,
      reservationId: `res_${accepted.jobId}`,
      country: 'mx',
      canonicalPhones: Buffer.from(JSON.stringify(phones)),
    });
    expect(again.job?.status).toBe(status.SUCCEEDED);
    // Said so: the gateway answers the retry that resumed its admission as an exact retry (replayed).
    expect(again.resumed).toBe(true);
    const blobs = await h.db.query(`SELECT kind FROM jobs.job_blobs WHERE job_id = $1`, [accepted.jobId]);
    expect(blobs.rows).toEqual([{ kind: 'result' }]);
  });

  it('FenceJob (issue 14): a stored job is returned, never fenced; a fenced id is refused by a late SubmitJob', async () => {
    const stored = await h.submit(['55 1111 3333']);
    const seen = await h.admissionJobs.fenceJob({ jobId: stored.jobId });
    expect(seen.fenced).toBe(false);
    expect(seen.job?.jobId).toBe(stored.jobId);
    await h.waitFor(stored.jobId, (j) => j.status === status.SUCCEEDED);

    const id = randomUUID();
    expect((await h.admissionJobs.fenceJob({ jobId: id })).fenced).toBe(true);
    expect((await h.admissionJobs.fenceJob({ jobId: id })).fenced).toBe(true);
    const late = h.jobs.submitJob({
      jobId: id,
      orgId: h.org,
      reservationId: `res_${id}`,
      country: 'mx',
      canonicalPhones: Buffer.from(JSON.stringify(['55 1111 4444'])),
    });
    expect(await reason(late)).toBe('platform_failure');
    expect((await h.db.query('SELECT 1 FROM jobs.jobs WHERE id = $1', [id])).rowCount).toBe(0);
  });

  it('SubmitJob refuses an input that is not JSON.stringify of its phones, and stores nothing of it', async () => {
    // Valid JSON each, and the phones are fine: but the worker reads the input as JSON.stringify's output
    // exactly, so an input written another way is refused here, not failed when it runs.
    for (const text of [String.raw`["\/"]`, String.raw`["\u0035"]`, '[ "5"]', String.raw`["\ud83d\ude00"]`]) {
      const id = randomUUID();
      const refused = h.jobs.submitJob({
        jobId: id,
        orgId: h.org,
        reservationId: `res_${id}`,
        country: 'mx',
        canonicalPhones: Buffer.from(text),
      });
      expect(await reason(refused), text).toBe('validation_error');
      expect((await h.db.query('SELECT 1 FROM jobs.jobs WHERE id = $1', [id])).rowCount).toBe(0);
    }
  });

  it("another organization's job is indistinguishable from a missing one", async () => {
    const job = await h.submit(['55 1111 2222']);
    const other = await reason(h.jobs.getJob({ orgId: 'org_other', jobId: job.jobId }));
    const missing = await reason(
      h.jobs.getJob({ orgId: h.org, jobId: '00000000-0000-4000-8000-000000000000' }),
    );
    expect(other).toBe('job_not_found');
    expect(missing).toBe('job_not_found');
    expect(await reason(h.result(job.jobId, 'org_other'))).toBe('job_not_found');
    expect(await reason(h.jobs.cancelJob({ orgId: 'org_other', jobId: job.jobId }))).toBe('job_not_found');
    await h.waitFor(job.jobId, (j) => j.status === status.SUCCEEDED);
  });

  it('cancel while queued is immediate and releases quota; cancel again keeps the state', async () => {
    await h.stack.stop('job-worker');
    try {
      const before = await h.reserved();
      const job = await h.submit(['55 2222 3333', '55 2222 4444']);
      expect((await h.reserved()).reserved).toBe(before.reserved + 2);
      expect(await reason(h.result(job.jobId))).toBe('job_result_not_ready');
      const c = await h.jobs.cancelJob({ orgId: h.org, jobId: job.jobId });
      expect(c.job?.status).toBe(status.CANCELLED);
      expect(c.job?.error).toBeUndefined();
      const again = await h.jobs.cancelJob({ orgId: h.org, jobId: job.jobId });
      expect(again.job?.status).toBe(status.CANCELLED);
      expect(await reason(h.result(job.jobId))).toBe('job_result_not_ready');
      await expect.poll(() => h.reserved(), { timeout: 5_000 }).toEqual(before);
      const input = await h.db.query(
        `SELECT count(*)::int AS n FROM jobs.job_blob_segments WHERE job_id = $1`,
        [job.jobId],
      );
      expect(input.rows[0].n).toBe(0);
    } finally {
      await h.stack.start('job-worker');
    }
  });

  it('cancel during an in-flight registry call: stays running until the call returns, then cancelled', async () => {
    await h.registry.setDrill({ latencyMs: 2_500 });
    try {
      const before = await h.reserved();
      const job = await h.submit(['55 3333 4444', '55 3333 5555', '55 3333 6666']);
      await h.waitFor(job.jobId, (j) => j.status === status.RUNNING);
      await new Promise((r) => setTimeout(r, 400));
      const c = await h.jobs.cancelJob({ orgId: h.org, jobId: job.jobId });
      expect(c.job?.status).toBe(status.RUNNING);
      expect(c.job?.cancelRequested).toBe(true);
      expect((await h.reserved()).reserved).toBeGreaterThan(0);
      const done = await h.waitFor(job.jobId, (j) => j.status !== status.RUNNING, 15_000);
      expect(done.status).toBe(status.CANCELLED);
      expect(done.error).toBeUndefined();
      expect(await reason(h.result(job.jobId))).toBe('job_result_not_ready');
      await expect.poll(() => h.reserved(), { timeout: 5_000 }).toEqual(before);
    } finally {
      await h.registry.setDrill({ clear: true });
    }
  });

  // Found by a review (2026-12-05): a cancel counted the calls a lease holder had in flight even after
  // its lease had run out (the worker stopped or dead: nobody would reconcile them), and answered
  // `running`, cancel requested, until the sweep or a new claim ended the job. Spec, States: "running |
  // cancel | no external call in progress | cancelled | result discarded; quota released".
  it('cancel after the lease of a worker stopped in a registry call ran out: cancelled at once', async () => {
    await h.registry.setDrill({ latencyMs: 10_000 });
    const worker = h.stack.child('job-worker')!;
    try {
      const before = await h.reserved();
      const job = await h.submit(['55 3333 7777']);
      const inCall = async () =>
        (await h.db.query('SELECT external_calls FROM jobs.jobs WHERE id = $1', [job.jobId])).rows[0]
          ?.external_calls as number;
      await expect.poll(inCall, { timeout: 15_000, interval: 20 }).toBe(1);
      worker.kill('SIGSTOP');
      const lapsed = async () =>
        (
          await h.db.query('SELECT lease_expires_at < now() AS lapsed FROM jobs.jobs WHERE id = $1', [
            job.jobId,
          ])
        ).rows[0]?.lapsed as boolean;
      await expect.poll(lapsed, { timeout: 10_000, interval: 50 }).toBe(true);
      const c = await h.jobs.cancelJob({ orgId: h.org, jobId: job.jobId });
      expect(c.job?.status).toBe(status.CANCELLED);
      expect(c.job?.error).toBeUndefined();
      worker.kill('SIGCONT');
      await expect.poll(() => h.reserved(), { timeout: 15_000 }).toEqual(before);
      expect((await h.jobs.getJob({ orgId: h.org, jobId: job.jobId })).job?.status).toBe(status.CANCELLED);
    } finally {
      worker.kill('SIGCONT');
      await h.registry.setDrill({ clear: true });
    }
  });

  it('known maintenance -> failed/country_service_maintenance; temporary failure -> country_service_temporarily_unavailable', async () => {
    const before = await h.reserved();
    await h.registry.setDrill({ failure: registryv1.DrillFailure.MAINTENANCE });
    try {
      const job = await h.submit(['55 4444 5555']);
      const done = await h.waitFor(job.jobId, (j) => j.status === status.FAILED);
      expect(done.error?.error).toBe('country_service_maintenance');
      expect(done.error?.country).toBe('mx');
      expect(await reason(h.result(job.jobId))).toBe('job_result_not_ready');
    } finally {
      await h.registry.setDrill({ clear: true });
    }
    await waitAdapterServing(h.stack, 'mx');
    await h.registry.setDrill({ failure: registryv1.DrillFailure.UNAVAILABLE });
    try {
      const job = await h.submit(['55 4444 6666']);
      const done = await h.waitFor(job.jobId, (j) => j.status === status.FAILED);
      expect(done.error?.error).toBe('country_service_temporarily_unavailable');
    } finally {
      await h.registry.setDrill({ clear: true });
      await waitAdapterServing(h.stack, 'mx');
    }
    await expect.poll(() => h.reserved(), { timeout: 5_000 }).toEqual(before);
  });

  // Found by a review (2026-12-03): a maintenance window an operator declared (dnc-admin country
  // maintenance: admission publishes it in KV dnc_country_status) stopped new admissions only; a job
  // admitted before it ran in it, answered from a registry copy the window was declared for.
  it('a maintenance window the operator declared fails a job as the maintenance an adapter reports does', async () => {
    const before = await h.reserved();
    const nc = await connect({ servers: TEST_NATS_URL });
    try {
      const kv = await new Kvm(nc).open(`${h.stack.natsPrefix}dnc_country_status`);
      const until = new Date(Date.now() + 120_000).toISOString();
      await kv.put('mx', JSON.stringify({ country: 'mx', maintenance_until: until }));
      try {
        // The worker reads a country's window at most every 2 s (an earlier job read it just now).
        await new Promise((r) => setTimeout(r, 2_100));
        const job = await h.submit(['55 4444 7777']);
        const done = await h.waitFor(job.jobId, (j) => j.status === status.FAILED);
        expect(done.error?.error).toBe('country_service_maintenance');
        expect(done.error?.country).toBe('mx');
        // The retry hint is the window's end, counted from now: read later, what is left of it (found by a
        // review, 2026-12-04: the seconds left at the failure were shown unchanged for the 30 days kept).
        expect(done.error?.retryAfterSeconds).toBeGreaterThan(90);
        expect(done.error?.retryAfterSeconds).toBeLessThanOrEqual(120);
        const age = (seconds: number) =>
          h.db.query(
            `UPDATE jobs.jobs SET terminal_at = terminal_at - make_interval(secs => $2) WHERE id = $1`,
            [job.jobId, seconds],
          );
        await age(60);
        const aged = (await h.jobs.getJob({ orgId: h.org, jobId: job.jobId })).job!;
        expect(aged.error?.retryAfterSeconds).toBeLessThanOrEqual(done.error!.retryAfterSeconds - 59);
        expect(aged.error?.retryAfterSeconds).toBeGreaterThan(0);
        await age(3_600);
        const past = (await h.jobs.getJob({ orgId: h.org, jobId: job.jobId })).job!;
        expect(past.error?.error).toBe('country_service_maintenance');
        expect(past.error?.retryAfterSeconds).toBe(0);
      } finally {
        await kv.put('mx', JSON.stringify({ country: 'mx', maintenance_until: null }));
      }
      // The window cleared: jobs run again (the worker reads it at most every 2 s).
      await new Promise((r) => setTimeout(r, 2_100));
      const job = await h.submit(['55 4444 8888']);
      expect((await h.waitFor(job.jobId, (j) => j.status === status.SUCCEEDED)).status).toBe(
        status.SUCCEEDED,
      );
    } finally {
      await nc.close();
    }
    await expect.poll(() => h.reserved(), { timeout: 5_000 }).toEqual({ ...before, used: before.used + 1 });
  });

  it('storage failure (the encrypted input is gone) -> failed/platform_failure, quota released', async () => {
    await h.stack.stop('job-worker');
    const before = await h.reserved();
    let jobId = '';
    try {
      jobId = (await h.submit(['55 5555 6666'])).jobId;
      await h.db.query(`DELETE FROM jobs.job_blobs WHERE job_id = $1`, [jobId]);
    } finally {
      await h.stack.start('job-worker');
    }
    const done = await h.waitFor(jobId, (j) => j.status === status.FAILED);
    expect(done.error?.error).toBe('platform_failure');
    expect(done.error?.country).toBe('');
    await expect.poll(() => h.reserved(), { timeout: 5_000 }).toEqual(before);
  });

  it('kill -9 of the worker mid-job: the job still completes, once', async () => {
    await h.registry.setDrill({ latencyMs: 1_500 });
    const before = await h.reserved();
    const phones = ['55 6666 7777', '55 6666 8888', '55 6666 9999', '55 7777 0000'];
    const job = await h.submit(phones);
    await h.waitFor(job.jobId, (j) => j.status === status.RUNNING);
    await h.stack.kill('job-worker');
    await h.registry.setDrill({ clear: true });
    await h.stack.start('job-worker');
    const done = await h.waitFor(job.jobId, (j) => j.status === status.SUCCEEDED, 40_000);
    expect(done.status).toBe(status.SUCCEEDED);
    const result = (await h.result(job.jobId)) as { summary: { total_checked: number } };
    expect(result.summary.total_checked).toBe(4);
    await expect.poll(() => h.reserved(), { timeout: 5_000 }).toEqual({ used: before.used + 4, reserved: 0 });
    const detail = await h.admin.getJobDetail({ jobId: job.jobId });
    expect(detail.attempts).toBe(2);
    expect(detail.history.map((x) => status[x.status])).toEqual([
      'QUEUED',
      'RUNNING',
      'RUNNING',
      'SUCCEEDED',
    ]);
  });

  it('a lost work message only delays the job: the reconciler publishes it again', async () => {
    await h.stack.stop('job-worker');
    let jobId = '';
    try {
      jobId = (await h.submit(['55 8888 1111'])).jobId;
      // Lose the message: purge the work queue while no worker is there to take it.
      const nc = await connect({ servers: TEST_NATS_URL });
      try {
        const jsm = await jetstreamManager(nc);
        const stream = `${h.stack.natsPrefix}DNC_JOBS`;
        // The publish follows SubmitJob's answer: lost once it is there.
        await expect
          .poll(async () => (await jsm.streams.info(stream)).state.messages, { timeout: 10_000 })
          .toBeGreaterThan(0);
        await jsm.streams.purge(stream);
        expect((await jsm.streams.info(stream)).state.messages).toBe(0);
      } finally {
        await nc.close();
      }
    } finally {
      await h.stack.start('job-worker');
    }
    const done = await h.waitFor(jobId, (j) => j.status === status.SUCCEEDED, 20_000);
    expect(done.status).toBe(status.SUCCEEDED);
    expect((await h.admin.getJobDetail({ jobId })).attempts).toBe(1);
  });

  it('a duplicated work message never runs a job twice', async () => {
    await h.registry.setDrill({ latencyMs: 1_500 });
    try {
      const job = await h.submit(['55 8888 2222', '55 8888 3333']);
      await h.waitFor(job.jobId, (j) => j.status === status.RUNNING);
      const nc = await connect({ servers: TEST_NATS_URL });
      try {
        const js = jetstream(nc);
        // The same work again under other message ids (the stream's duplicate window would drop the id).
        for (const n of [1, 2])
          await js.publish(`${h.stack.natsPrefix}dnc.jobs.mx`, JSON.stringify({ job_id: job.jobId }), {
            msgID: `${job.jobId}.dup${n}`,
          });
      } finally {
        await nc.close();
      }
      const before = await h.reserved();
      await h.waitFor(job.jobId, (j) => j.status === status.SUCCEEDED, 20_000);
      await new Promise((r) => setTimeout(r, 1_000));
      const detail = await h.admin.getJobDetail({ jobId: job.jobId });
      expect(detail.attempts).toBe(1);
      expect(detail.history.filter((x) => x.status === status.SUCCEEDED)).toHaveLength(1);
      await expect
        .poll(() => h.reserved(), { timeout: 5_000 })
        .toEqual({ used: before.used + 2, reserved: 0 });
    } finally {
      await h.registry.setDrill({ clear: true });
    }
  });

  it('a graceful worker stop mid-job hands the job back, not counted as an attempt; the next worker resumes it at once', async () => {
    // A rolling deploy stops workers one after another, each one's jobs resumed by the next (often also
    // about to stop). Each stop counted as an execution attempt: the fifth (DNC_JOB_MAX_ATTEMPTS) ended
    // a job that never failed `failed`/`platform_failure`, "too many execution attempts".
    await h.registry.setDrill({ latencyMs: 1_500 });
    const job = await h.submit(['55 8888 4444', '55 8888 5555', '55 8888 6666']);
    const claims = async () =>
      (await h.admin.getJobDetail({ jobId: job.jobId })).history.filter((x) => x.status === status.RUNNING)
        .length;
    const MAX_ATTEMPTS = 5; // the scheduler's default
    for (let stop = 1; stop <= MAX_ATTEMPTS; stop++) {
      await expect.poll(claims, { timeout: 20_000 }).toBe(stop);
      await h.stack.stop('job-worker');
      if (stop < MAX_ATTEMPTS) await h.stack.start('job-worker');
    }
    await h.registry.setDrill({ clear: true });
    const stoppedAt = Date.now();
    await h.stack.start('job-worker');
    const done = await h.waitFor(job.jobId, (j) => j.status !== status.RUNNING, 20_000);
    expect(status[done.status]).toBe('SUCCEEDED');
    // Not after a lease or ack timeout: the lease was released and the message nak'ed on the way out.
    expect(Date.now() - stoppedAt).toBeLessThan(10_000);
    const detail = await h.admin.getJobDetail({ jobId: job.jobId });
    // Every execution keeps its own number (the worker's logs, the operator's view); the handed-back
    // ones did not count against the limit.
    expect(detail.attempts).toBe(MAX_ATTEMPTS + 1);
    expect(detail.history.filter((x) => x.status === status.RUNNING)).toHaveLength(MAX_ATTEMPTS + 1);
    expect(detail.history.filter((x) => x.status === status.SUCCEEDED)).toHaveLength(1);
  });

  it('metrics: the fixed job metric names are exported', async () => {
    const text = await (
      await fetch(`http://127.0.0.1:${h.stack.addresses.metrics['job-scheduler']}/metrics`)
    ).text();
    for (const name of [
      'dnc_jobs{',
      'dnc_job_duration_seconds_bucket',
      'dnc_jobs_near_hard_cap',
      'dnc_cleanup_pending',
      'dnc_cleanup_failures_total',
    ])
      expect(text).toContain(name);
    expect(text).toMatch(/dnc_jobs\{[^}]*state="succeeded"[^}]*\} [1-9]/);
    // Dispatch lag is observed by the worker that first starts a job (per process), right after the
    // claim; poll instead of racing it.
    const fresh = await h.submit(['55 8888 7777']);
    await h.waitFor(fresh.jobId, (j) => j.status === status.SUCCEEDED);
    const workerMetrics = async () =>
      (await fetch(`http://127.0.0.1:${h.stack.addresses.metrics['job-worker']}/metrics`)).text();
    await expect
      .poll(workerMetrics, { timeout: 5_000 })
      .toMatch(/dnc_job_dispatch_lag_seconds_count\{[^}]*\} [1-9]/);
  });

  it('operator view lists jobs by state and never returns numbers; cleanup status is observable', async () => {
    const list = await h.admin.listJobs({ orgId: h.org, status: status.SUCCEEDED });
    expect(list.jobs.length).toBeGreaterThan(0);
    expect(list.jobs.every((j) => j.status === status.SUCCEEDED)).toBe(true);
    const cleanup = await h.admin.getCleanupStatus({});
    expect(cleanup.failed).toBe(0n);
    const cli = (await h.stack.admin(['jobs', 'list', '--org', h.org, '--state', 'succeeded'])) as {
      jobs: { job_id: string; status: string }[];
    };
    expect(cli.jobs.map((j) => j.job_id).sort()).toEqual(list.jobs.map((j) => j.jobId).sort());
    const show = (await h.stack.admin(['jobs', 'show', '--job', cli.jobs[0]!.job_id])) as {
      history: { status: string }[];
      timings_ms: { total: number };
    };
    expect(show.history.at(-1)?.status).toBe('succeeded');
    expect(show.timings_ms.total).toBeGreaterThanOrEqual(0);
    const cleanupCli = (await h.stack.admin(['jobs', 'cleanup-status'])) as { failed: number };
    expect(cleanupCli.failed).toBe(0);
    const text = JSON.stringify([list, cli, show], (_k, v) => (typeof v === 'bigint' ? String(v) : v));
    for (const n of NEEDLES) expect(text).not.toContain(n);
  });

  it('no plaintext number in Postgres or in any log; no reservation left behind', async () => {
    expect(await plaintextInDatabase(h.db, NEEDLES)).toEqual([]);
    const logs = h.stack.logs();
    for (const n of NEEDLES) expect(logs).not.toContain(n);
    expect((await h.reserved()).reserved).toBe(0);
  });
});
