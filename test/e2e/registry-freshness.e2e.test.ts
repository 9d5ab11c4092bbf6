import { REGISTRY_SNAPSHOT_HEADER } from '@dnc/api-contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/http.js';
import { loadRegistry, type SeededOrg, seedOrg, waitCountryServing } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';

/** The co adapter answers from a snapshot at most this old (seconds); short so the test can outlive it. */
const MAX_AGE_SECONDS = 12;

interface RegistryStatus {
  country: string;
  snapshot_time: string | null;
  snapshot_age_seconds: number | null;
  max_age_seconds: number | null;
  stale: boolean;
  adapter: { status: string };
}

// Issue 19, item 4: results carry the time of the registry snapshot they were read from
// (X-Registry-Snapshot-At), `dnc-admin registry status` shows each country's age against its maximum,
// and past that age the country is not served (503 country_service_temporarily_unavailable) instead of
// answered "safe" from stale data; a new load serves it again.
describe('registry freshness end to end', () => {
  let stack: TestStack;
  let org: SeededOrg;
  const status = async () =>
    ((await stack.admin(['registry', 'status'])) as { countries: RegistryStatus[] }).countries.find(
      (c) => c.country === 'co',
    ) as RegistryStatus;
  const scrub = (phones: string[]) =>
    call(stack.baseUrl, 'POST', '/v1/scrub', {
      apiKey: org.apiKey,
      idempotencyKey: `fresh-${Date.now()}-${Math.random()}`,
      json: { country: 'co', phones },
    });

  beforeAll(async () => {
    stack = await startTestStack({
      label: 'freshness',
      countries: ['co'],
      processEnv: { 'adapter-co': { DNC_REGISTRY_MAX_AGE_SECONDS: String(MAX_AGE_SECONDS) } },
    });
    org = await seedOrg(stack, ['co']);
  });
  afterAll(async () => {
    await stack?.teardown();
  });

  it('a fresh snapshot: v1 and v2 results name its time; registry status shows its age and maximum', async () => {
    await loadRegistry(stack, 'co', ['+57 300 123 4567']);
    const loaded = await status();
    expect(loaded).toMatchObject({
      max_age_seconds: MAX_AGE_SECONDS,
      stale: false,
      adapter: { status: 'serving' },
    });
    expect(loaded.snapshot_age_seconds).toBeLessThan(MAX_AGE_SECONDS);

    const v1 = await scrub(['+57 300 123 4567', '3109999999', 'n/a']);
    expect(v1.status).toBe(200);
    expect(v1.headers.get(REGISTRY_SNAPSHOT_HEADER)).toBe(loaded.snapshot_time);
    expect(Object.keys(v1.body).sort()).toEqual([
      'invalid_numbers',
      'prohibited_numbers_to_call',
      'safe_numbers_to_call',
      'summary',
    ]);
    // Every input invalid: the local registry still answered from (and names) its snapshot.
    const allInvalid = await scrub(['n/a']);
    expect(allInvalid.status).toBe(200);
    expect(allInvalid.headers.get(REGISTRY_SNAPSHOT_HEADER)).toBe(loaded.snapshot_time);

    const submitted = await call(stack.baseUrl, 'POST', '/v2/scrub', {
      apiKey: org.apiKey,
      idempotencyKey: `fresh-job-${Date.now()}`,
      json: { country: 'co', phones: ['+57 300 123 4567', '3109999999'] },
    });
    expect(submitted.status).toBe(202);
    const jobPath = `/v2/scrub/${submitted.body.job_id}`;
    for (let i = 0; i < 100; i++) {
      const job = await call(stack.baseUrl, 'GET', jobPath, { apiKey: org.apiKey });
      if (job.body.status === 'succeeded') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const result = await call(stack.baseUrl, 'GET', `${jobPath}/result`, { apiKey: org.apiKey });
    expect(result.status).toBe(200);
    expect(result.headers.get(REGISTRY_SNAPSHOT_HEADER)).toBe(loaded.snapshot_time);
  });

  it('past its maximum age the country is refused with 503, never answered; a new load serves it again', async () => {
    const loaded = await status();
    const snapshotAt = Date.parse(loaded.snapshot_time as string);
    await new Promise((r) =>
      setTimeout(r, Math.max(0, snapshotAt + (MAX_AGE_SECONDS + 1) * 1000 - Date.now())),
    );
    const stale = await status();
    expect(stale).toMatchObject({ stale: true, adapter: { status: 'unavailable' } });

    const refused = await scrub(['+57 300 123 4567', '3109999999']);
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual(
      expect.objectContaining({ error: 'country_service_temporarily_unavailable' }),
    );
    expect(refused.text).not.toContain('3109999999');
    expect(refused.headers.get(REGISTRY_SNAPSHOT_HEADER)).toBeNull();

    await loadRegistry(stack, 'co', ['+57 300 123 4567']);
    await waitCountryServing(stack, 'co');
    const served = await scrub(['3109999999']);
    expect(served.status).toBe(200);
    expect(Date.parse(served.headers.get(REGISTRY_SNAPSHOT_HEADER) as string)).toBeGreaterThan(snapshotAt);
  });
});
