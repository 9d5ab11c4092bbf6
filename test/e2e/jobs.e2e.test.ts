import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { expectJobResource, v2 } from '../../services/job-scheduler/test/support/e2e.js';
import { waitAdapterServing } from '../../services/job-scheduler/test/support/harness.js';
import { call } from '../support/http.js';
import { expectInvariants } from '../support/invariants.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';

// Spec: POST /v2/scrub, GET /v2/scrub/{job_id}, .../result, .../cancel, States, expires_at, JobError,
// Errors, Idempotency. Issue 6. Every service is its own process; faults are real (drills, kill -9).

const LISTED = ['+52 55 8123 4567', '55 8123 4568'];
const NEEDLES = [
  '8123 4567',
  '81234567',
  '81234568',
  '4455 6677',
  '44556677',
  // Every '55 3322 11xx' input of the suite, as written and as digits.
  '3322 11',
  '55332211',
];

describe('v2 durable scrub jobs end to end (issue 6)', () => {
  let stack: TestStack;
  let org: SeededOrg;
  let other: SeededOrg;
  let api: ReturnType<typeof v2>;
  const drill = (...args: string[]) => stack.admin(['adapter', 'drill', '--country', 'mx', ...args]);

  beforeAll(async () => {
    stack = await startTestStack({
      label: 'jobs',
      countries: ['mx'],
      env: { DNC_SWEEP_INTERVAL_MS: '200', DNC_ADAPTER_RETRIES: '1' },
      processEnv: {
        'job-worker': { DNC_WORKER_UNIT_SIZE: '2', DNC_JOB_LEASE_MS: '2000', DNC_JOBS_ACK_WAIT_MS: '3000' },
      },
    });
    org = await seedOrg(stack, ['mx']);
    other = await seedOrg(stack, ['mx'], { name: 'Other Org' });
    // Polling is many requests: lift the technical rate limit (independent of quota) for these orgs.
    for (const o of [org, other])
      await stack.admin(['org', 'set-rate-limit', '--org', o.orgId, '--limit', '60000']);
    api = v2(stack, () => org);
    await loadRegistry(stack, 'mx', ['+525581234567', '+525581234568']);
  });

  afterEach(async () => {
    await drill('--clear').catch(() => {});
    // After each test, the invariant checker over the stores: every job terminal, no reservation left
    // behind, each job charged as its outcome says, one job per key, no plaintext number in Postgres,
    // NATS, Redis or any process's logs.
    await expectInvariants(stack, { canaries: NEEDLES });
  });

  afterAll(async () => {
    await stack?.teardown();
  });

  it('queued -> running -> succeeded: 202 job resource, poll, 200 result identical to v1 for the same input', async () => {
    const phones = [...LISTED, '+52 33 4455 6677', 'not a number', LISTED[0]!, ''];
    const before = await api.quota();
    const t0 = Date.now();
    const res = await api.submit(phones);
    expect(res.status).toBe(202);
    expect(res.headers.get('idempotency-replayed')).toBeNull();
    expectJobResource(res.body, stack.baseUrl);
    expect(res.body).toMatchObject({ status: 'queued', country: 'mx', submitted_count: 6 });
    // expires_at while active: admission + 24 h.
    expect(Date.parse(res.body.expires_at) - Date.parse(res.body.created_at)).toBe(86_400_000);
    expect(Math.abs(Date.parse(res.body.created_at) - t0)).toBeLessThan(5_000);

    const done = await api.waitFor(res.body.job_id, (s) => s === 'succeeded');
    expectJobResource(done.body, stack.baseUrl);
    expect(done.body.error).toBeUndefined();
    // expires_at once succeeded: terminalization + 7 days.
    expect(Date.parse(done.body.expires_at) - Date.now()).toBeGreaterThan(7 * 86_400_000 - 60_000);

    const result = await api.result(res.body.job_id);
    expect(result.status).toBe(200);
    const v1 = await call(stack.baseUrl, 'POST', '/v1/scrub', {
      apiKey: org.apiKey,
      idempotencyKey: api.key(),
      json: { country: 'mx', phones },
    });
    expect(v1.status).toBe(200);
    expect(result.body).toEqual(v1.body);
    expect(result.body.summary).toEqual({
      total_checked: 6,
      prohibited_numbers: 3,
      safe_numbers: 1,
      invalid_numbers: 2,
    });
    await expect
      .poll(() => api.quota(), { timeout: 5_000 })
      .toEqual({ used: before.used + 6 + 6, reserved: 0 });
  });

  it('replays: same key and body -> same job (202 active, 200 terminal, Idempotency-Replayed); other body -> 409', async () => {
    // Long enough that the job is still running after two dnc-admin reads on a loaded machine.
    await drill('--latency-ms', '8000');
    const key = api.key();
    const phones = ['55 3322 1100'];
    const first = await api.submit(phones, { idempotencyKey: key });
    expect(first.status).toBe(202);
    const quotaAfterFirst = await api.quota();
    const active = await api.submit(phones, { idempotencyKey: key });
    expect(active.status).toBe(202);
    expect(active.headers.get('idempotency-replayed')).toBe('true');
    expect(active.body.job_id).toBe(first.body.job_id);
    expect(['queued', 'running']).toContain(active.body.status);
    expect(await api.quota()).toEqual(quotaAfterFirst);
    await drill('--clear');
    await api.waitFor(first.body.job_id, (s) => s === 'succeeded');
    const terminal = await api.submit(phones, { idempotencyKey: key });
    expect(terminal.status).toBe(200);
    expect(terminal.headers.get('idempotency-replayed')).toBe('true');
    expect(terminal.body.job_id).toBe(first.body.job_id);
    expect(terminal.body.status).toBe('succeeded');
    const reused = await api.submit(['55 3322 1101'], { idempotencyKey: key });
    expect(reused.status).toBe(409);
    expect(reused.body.error).toBe('idempotency_key_reused');
  });

  it("404 job_not_found for a missing job and for another organization's job: byte-for-byte the same answer", async () => {
    const job = await api.submit(['55 3322 1102']);
    await api.waitFor(job.body.job_id, (s) => s === 'succeeded');
    for (const path of ['', '/result']) {
      const foreign = await api.request('GET', `/v2/scrub/${job.body.job_id}${path}`, {
        apiKey: other.apiKey,
      });
      const missing = await api.request('GET', `/v2/scrub/00000000-0000-4000-8000-000000000000${path}`);
      expect(foreign.status).toBe(404);
      expect(missing.status).toBe(404);
      expect(foreign.text).toBe(missing.text);
      expect(foreign.headers.get('content-type')).toBe(missing.headers.get('content-type'));
      expect(foreign.body).toEqual({ error: 'job_not_found' });
    }
    const foreignCancel = await api.cancel(job.body.job_id, other.apiKey);
    const missingCancel = await api.cancel('00000000-0000-4000-8000-000000000000');
    expect(foreignCancel.status).toBe(404);
    expect(foreignCancel.text).toBe(missingCancel.text);
    // Still succeeded: the other organization's cancel touched nothing.
    expect((await api.status(job.body.job_id)).body.status).toBe('succeeded');
  });

  it('queued -> cancelled at once (200, no error); result 409; cancel again keeps cancelled', async () => {
    await stack.stop('job-worker');
    try {
      const job = await api.submit(['55 3322 1103', '55 3322 1104']);
      expect((await api.quota()).reserved).toBe(2);
      const notReady = await api.result(job.body.job_id);
      expect(notReady.status).toBe(409);
      expect(notReady.body.error).toBe('job_result_not_ready');
      const c = await api.cancel(job.body.job_id);
      expect(c.status).toBe(200);
      expectJobResource(c.body, stack.baseUrl);
      expect(c.body.status).toBe('cancelled');
      expect(c.body.error).toBeUndefined();
      // expires_at once cancelled: terminalization + 30 days.
      expect(Date.parse(c.body.expires_at) - Date.now()).toBeGreaterThan(30 * 86_400_000 - 60_000);
      const again = await api.cancel(job.body.job_id);
      expect(again.status).toBe(200);
      expect(again.body.status).toBe('cancelled');
      const r = await api.result(job.body.job_id);
      expect(r.status).toBe(409);
      expect(r.body.error).toBe('job_result_not_ready');
    } finally {
      await stack.start('job-worker');
    }
  });

  it('running + cancel during an in-flight registry call: 202 (running, cancel_requested), then cancelled', async () => {
    // The worker runs both units at once and hears the cancel when a call ends: the calls must outlast
    // the poll that sees `running`, the 500 ms and the cancel, however slow the machine is that day.
    await drill('--latency-ms', '8000');
    const job = await api.submit(['55 3322 1105', '55 3322 1106', '55 3322 1107']);
    await api.waitFor(job.body.job_id, (s) => s === 'running');
    const running = await api.result(job.body.job_id);
    expect(running.status).toBe(409);
    expect(running.body.error).toBe('job_result_not_ready');
    await new Promise((r) => setTimeout(r, 500));
    const c = await api.cancel(job.body.job_id);
    expect(c.status).toBe(202);
    expectJobResource(c.body, stack.baseUrl);
    expect(c.body).toMatchObject({ status: 'running', cancel_requested: true });
    expect((await api.quota()).reserved).toBe(3);
    const done = await api.waitFor(job.body.job_id, (s) => s !== 'running', 20_000);
    expect(done.body.status).toBe('cancelled');
    expect(done.body.error).toBeUndefined();
    expect((await api.result(job.body.job_id)).status).toBe(409);
  });

  it('terminal + cancel: a succeeded job keeps its state (200)', async () => {
    const job = await api.submit(['55 3322 1108']);
    await api.waitFor(job.body.job_id, (s) => s === 'succeeded');
    const c = await api.cancel(job.body.job_id);
    expect(c.status).toBe(200);
    expect(c.body.status).toBe('succeeded');
    expect((await api.result(job.body.job_id)).status).toBe(200);
  });

  it('running -> failed: maintenance -> country_service_maintenance; temporary failure -> country_service_temporarily_unavailable', async () => {
    const before = await api.quota();
    // Admitted while the country serves; the country fails while the job waits, then it runs.
    const admitThenFail = async (failure: string) => {
      await stack.stop('job-worker');
      let id = '';
      try {
        const job = await api.submit(['55 3322 1109']);
        expect(job.status).toBe(202);
        id = job.body.job_id;
        await drill('--fail', failure);
      } finally {
        await stack.start('job-worker');
      }
      const failed = await api.waitFor(id, (s) => s === 'failed');
      await drill('--clear');
      await waitAdapterServing(stack, 'mx');
      expectJobResource(failed.body, stack.baseUrl);
      return failed;
    };
    const m = await admitThenFail('maintenance');
    expect(m.body.error).toMatchObject({ error: 'country_service_maintenance', country: 'mx' });
    expect(Date.parse(m.body.expires_at) - Date.now()).toBeGreaterThan(30 * 86_400_000 - 60_000);
    const r = await api.result(m.body.job_id);
    expect(r.status).toBe(409);
    expect(r.body.error).toBe('job_result_not_ready');
    const u = await admitThenFail('unavailable');
    expect(u.body.error).toMatchObject({ error: 'country_service_temporarily_unavailable', country: 'mx' });
    // Quota released for both: nothing used, nothing reserved.
    await expect.poll(() => api.quota(), { timeout: 5_000 }).toEqual(before);
  });

  it('running -> failed: storage failure (encrypted input lost) -> platform_failure, quota released', async () => {
    const pg = await import('pg');
    const before = await api.quota();
    await stack.stop('job-worker');
    let id = '';
    try {
      id = (await api.submit(['55 3322 1111'])).body.job_id;
      const db = new pg.default.Client({ connectionString: stack.databaseUrl });
      await db.connect();
      await db.query('DELETE FROM jobs.job_blobs WHERE job_id = $1', [id]);
      await db.end();
    } finally {
      await stack.start('job-worker');
    }
    const failed = await api.waitFor(id, (s) => s === 'failed');
    expect(failed.body.error).toEqual({ error: 'platform_failure' });
    await expect.poll(() => api.quota(), { timeout: 5_000 }).toEqual(before);
  });

  it('kill -9 of the worker mid-job: the job still completes, once (quota used exactly once)', async () => {
    await drill('--latency-ms', '1500');
    const before = await api.quota();
    const phones = ['55 3322 1112', '55 3322 1113', '55 3322 1114', '55 3322 1115'];
    const job = await api.submit(phones);
    await api.waitFor(job.body.job_id, (s) => s === 'running');
    await stack.kill('job-worker');
    await drill('--clear');
    await stack.start('job-worker');
    await api.waitFor(job.body.job_id, (s) => s === 'succeeded', 40_000);
    const result = await api.result(job.body.job_id);
    expect(result.body.summary.total_checked).toBe(4);
    await expect.poll(() => api.quota(), { timeout: 5_000 }).toEqual({ used: before.used + 4, reserved: 0 });
    const shown = (await stack.admin(['jobs', 'show', '--job', job.body.job_id])) as {
      attempts: number;
      history: { status: string }[];
    };
    expect(shown.attempts).toBe(2);
    expect(shown.history.filter((h) => h.status === 'succeeded')).toHaveLength(1);
    // The result it keeps for 7 days is wrapped by the stack's one key, which is not retirable.
    const { keys } = (await stack.admin(['jobs', 'keys'])) as {
      keys: { kek_id: string; active: boolean; configured: boolean; blobs: number; retirable: boolean }[];
    };
    expect(keys).toEqual([
      expect.objectContaining({ kek_id: 'local1', active: true, configured: true, retirable: false }),
    ]);
    expect(keys[0]!.blobs).toBeGreaterThanOrEqual(1);
  });

  it('64 characters are code points end to end: a job of 64-emoji inputs runs and is charged, 65 are 400 (issue 14 item 8)', async () => {
    const at = '\u{1F4DE}'.repeat(64);
    const before = await api.quota();
    const job = await api.submit([at, '55 3322 1199', at]);
    expect(job.status).toBe(202);
    await api.waitFor(job.body.job_id, (s) => s === 'succeeded');
    const result = await api.result(job.body.job_id);
    expect(result.body.invalid_numbers).toEqual([
      { input: at, reason: 'unparseable' },
      { input: at, reason: 'unparseable' },
    ]);
    const past = await api.submit([`${at}\u{1F4DE}`]);
    expect([past.status, past.body.error]).toEqual([400, 'validation_error']);
    await expect.poll(() => api.quota(), { timeout: 10_000 }).toEqual({ used: before.used + 3, reserved: 0 });
  });

  it('a malformed job id is the same 404 as a missing one', async () => {
    const bad = await api.status('NOT-A-UUID');
    const missing = await api.status('00000000-0000-4000-8000-000000000000');
    expect(bad.status).toBe(404);
    expect(bad.text).toBe(missing.text);
  });
});
