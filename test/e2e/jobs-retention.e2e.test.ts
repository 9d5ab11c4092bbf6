import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { expectJobResource, plaintextInPostgres, v2 } from '../../services/job-scheduler/test/support/e2e.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';

// Spec: States (hard cap), expires_at, GET .../result 410 job_expired and 410 job_result_expired,
// metadata TTL, Limits (three 25 MiB limits -> 413). Issue 6. Periods shortened by configuration.

describe('v2 hard cap, retention and size limits end to end (issue 6)', () => {
  let stack: TestStack;
  let org: SeededOrg;
  let api: ReturnType<typeof v2>;

  beforeAll(async () => {
    stack = await startTestStack({
      label: 'jobs_ttl',
      countries: ['mx'],
      env: {
        DNC_SWEEP_INTERVAL_MS: '200',
        DNC_JOB_HARD_CAP_SECONDS: '3',
        DNC_RESULT_TTL_SECONDS: '4',
        // The result's purge waits twice a download's longest time past its TTL: 1 s here.
        DNC_RESULT_STREAM_MAX_MS: '500',
        DNC_METADATA_TTL_SECONDS: '8',
      },
    });
    org = await seedOrg(stack, ['mx'], { quota: 10_000_000 });
    await stack.admin(['org', 'set-rate-limit', '--org', org.orgId, '--limit', '60000']);
    api = v2(stack, () => org);
    await loadRegistry(stack, 'mx', ['+525581234567']);
  });

  afterEach(async () => {
    await expect.poll(async () => (await api.quota()).reserved, { timeout: 10_000 }).toBe(0);
  });

  afterAll(async () => {
    if (stack) {
      expect(await plaintextInPostgres(stack.databaseUrl, ['81234567', '12123434', '12125656'])).toEqual([]);
      for (const n of ['8123 4567', '1212 3434', '1212 5656']) expect(stack.logs()).not.toContain(n);
    }
    await stack?.teardown();
  });

  it('running/queued -> expired at the hard cap: JobError job_expired, quota released, result 410 job_expired', async () => {
    await stack.stop('job-worker');
    try {
      const before = await api.quota();
      const res = await api.submit(['55 1212 3434']);
      expect(res.status).toBe(202);
      expect(Date.parse(res.body.expires_at) - Date.parse(res.body.created_at)).toBe(3_000);
      const expired = await api.waitFor(res.body.job_id, (s) => s === 'expired', 10_000);
      expectJobResource(expired.body, stack.baseUrl);
      expect(expired.body.error).toEqual({ error: 'job_expired' });
      // expires_at of an expired job: terminalization + metadata TTL.
      expect(Date.parse(expired.body.expires_at) - Date.now()).toBeGreaterThan(5_000);
      const r = await api.result(res.body.job_id);
      expect(r.status).toBe(410);
      expect(r.body.error).toBe('job_expired');
      // Cancel of a terminal job keeps its state.
      const c = await api.cancel(res.body.job_id);
      expect(c.status).toBe(200);
      expect(c.body.status).toBe('expired');
      await expect.poll(() => api.quota(), { timeout: 5_000 }).toEqual(before);
    } finally {
      await stack.start('job-worker');
    }
  });

  it('running -> expired at the hard cap while a registry call is slow; the late call changes nothing', async () => {
    const before = await api.quota();
    await stack.admin(['adapter', 'drill', '--country', 'mx', '--latency-ms', '6000']);
    try {
      const res = await api.submit(['55 1212 3434']);
      await api.waitFor(res.body.job_id, (s) => s === 'running', 5_000);
      const expired = await api.waitFor(res.body.job_id, (s) => s !== 'running', 10_000);
      expect(expired.body.status).toBe('expired');
      expect(expired.body.error).toEqual({ error: 'job_expired' });
      // The slow call returns after the cap: the job keeps its terminal state and no result appears.
      await new Promise((r) => setTimeout(r, 4_000));
      expect((await api.status(res.body.job_id)).body.status).toBe('expired');
      expect((await api.result(res.body.job_id)).status).toBe(410);
      await expect.poll(() => api.quota(), { timeout: 5_000 }).toEqual(before);
    } finally {
      await stack.admin(['adapter', 'drill', '--country', 'mx', '--clear']);
    }
  });

  it('succeeded: result 200 within its TTL, then 410 job_result_expired; metadata then 404 job_not_found', async () => {
    const res = await api.submit(['55 8123 4567', '55 1212 5656']);
    const done = await api.waitFor(res.body.job_id, (s) => s === 'succeeded');
    expect(Date.parse(done.body.expires_at) - Date.now()).toBeLessThanOrEqual(4_000);
    const ok = await api.result(res.body.job_id);
    expect(ok.status).toBe(200);
    expect(ok.body.summary.total_checked).toBe(2);
    await expect
      .poll(async () => (await api.result(res.body.job_id)).status, { timeout: 8_000, interval: 250 })
      .toBe(410);
    const gone = await api.result(res.body.job_id);
    expect(gone.body.error).toBe('job_result_expired');
    await expect
      .poll(async () => (await api.status(res.body.job_id)).status, { timeout: 12_000, interval: 250 })
      .toBe(404);
    const missing = await api.status('00000000-0000-4000-8000-000000000000');
    expect((await api.status(res.body.job_id)).text).toBe(missing.text);
  });

  it('413 payload_too_large: raw body over 25 MiB; complete-result estimate over 25 MiB', async () => {
    // Raw body: 400,000 strings of 64 characters is over 26,214,400 bytes.
    const big = await api.submit(Array.from({ length: 400_000 }, (_, i) => String(i).padStart(64, '5')));
    expect(big.status).toBe(413);
    expect(big.body.error).toBe('payload_too_large');
    // Body of 11 MB, but every input is invalid (too long for a Mexican number): 28 MB of invalid entries.
    const phones = Array.from({ length: 500_000 }, (_, i) => `5${String(i).padStart(19, '0')}`);
    const estimate = await api.submit(phones);
    expect(estimate.status).toBe(413);
    expect(estimate.body.error).toBe('payload_too_large');
    // Nothing was admitted: no reservation, no job.
    expect((await api.quota()).reserved).toBe(0);
    const listed = (await stack.admin(['jobs', 'list', '--org', org.orgId])) as { jobs: unknown[] };
    expect(listed.jobs.length).toBeLessThanOrEqual(2);
  });
});
