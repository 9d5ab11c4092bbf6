import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/http.js';
import { expectInvariants } from '../support/invariants.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';

// Issue 14 item 4, over HTTP: the fingerprint secret is rotated on a running stack. Requests are
// completed under version v1; the gateway (which fingerprints every idempotent request) is restarted
// with a new secret as v2 and the old one as DNC_FINGERPRINT_PREVIOUS_SECRET/VERSION, admission
// restarted too. Then (spec, Idempotency 5 and 7) the same key with the same phones replays for free
// (200, Idempotency-Replayed: true, no second usage record), and the same key with other phones is
// 409 idempotency_key_reused. Before the fix a record of another version was taken for the same
// request: other phones replayed the stored answer, uncharged.

const OLD_SECRET = 'fingerprint-secret-of-version-one';
const NEW_SECRET = 'fingerprint-secret-of-version-two';
const PHONES = ['+573111234567', '+573119876543'];
const OTHER = ['+573115550000', '+573115550001'];
const NEEDLES = ['3111234567', '3119876543', '3115550000', '3115550001'];

describe('a fingerprint secret rotation, gateway to admission (issue 14 item 4)', () => {
  let stack: TestStack;
  let org: SeededOrg;
  let n = 0;
  const newKey = () => `fp-rotation-${Date.now()}-${n++}`;

  const scrub = (key: string, phones: string[]) =>
    call(stack.baseUrl, 'POST', '/v1/scrub', {
      apiKey: org.apiKey,
      idempotencyKey: key,
      json: { country: 'co', phones },
    });
  const submit = (key: string, phones: string[]) =>
    call(stack.baseUrl, 'POST', '/v2/scrub', {
      apiKey: org.apiKey,
      idempotencyKey: key,
      json: { country: 'co', phones },
    });
  const usage = async () =>
    ((await stack.admin(['usage', '--org', org.orgId])) as { records: { count: number; kind: string }[] })
      .records;
  const quota = async () => {
    const q = (await stack.admin(['quota', 'show', '--org', org.orgId])) as {
      accounts: { country: string; used: number; reserved: number }[];
    };
    const a = q.accounts.find((x) => x.country === 'co')!;
    return { used: a.used, reserved: a.reserved };
  };

  beforeAll(async () => {
    stack = await startTestStack({
      label: 'fp_rotation',
      countries: ['co'],
      env: { DNC_FINGERPRINT_SECRET: OLD_SECRET, DNC_FINGERPRINT_VERSION: 'v1' },
    });
    org = await seedOrg(stack, ['co']);
    await loadRegistry(stack, 'co', [PHONES[0]!]);
  });

  afterAll(async () => {
    await stack?.teardown();
  });

  it('after the rotation the same key and phones replay free; the same key with other phones is 409 idempotency_key_reused', async () => {
    // Before the rotation: a v1 request and a v2 job, completed under version v1.
    const syncKey = newKey();
    const first = await scrub(syncKey, PHONES);
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotency-replayed')).toBeNull();
    const jobKey = newKey();
    const job = await submit(jobKey, PHONES);
    expect(job.status).toBe(202);
    const jobId = job.body.job_id as string;
    await expect
      .poll(
        async () =>
          (await call(stack.baseUrl, 'GET', `/v2/scrub/${jobId}`, { apiKey: org.apiKey })).body.status,
        { timeout: 60_000, interval: 250 },
      )
      .toBe('succeeded');
    await expect.poll(quota, { timeout: 10_000 }).toEqual({ used: 4, reserved: 0 });
    const records = await usage();
    expect(records.map((r) => r.count)).toEqual([2, 2]);

    // The rotation: a new secret as v2, the old one kept as the previous version.
    for (const name of ['gateway', 'admission'] as const) await stack.stop(name);
    Object.assign(stack.processes.get('gateway')!.env, {
      DNC_FINGERPRINT_SECRET: NEW_SECRET,
      DNC_FINGERPRINT_VERSION: 'v2',
      DNC_FINGERPRINT_PREVIOUS_SECRET: OLD_SECRET,
      DNC_FINGERPRINT_PREVIOUS_VERSION: 'v1',
    });
    await stack.start('admission');
    await stack.start('gateway');

    // v1: the exact retry replays the stored answer, free; other phones under the key are refused.
    const replay = await scrub(syncKey, PHONES);
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotency-replayed')).toBe('true');
    expect(replay.body).toEqual(first.body);
    const reused = await scrub(syncKey, OTHER);
    expect([reused.status, reused.body.error]).toEqual([409, 'idempotency_key_reused']);

    // v2: the same for the job's key.
    const jobReplay = await submit(jobKey, PHONES);
    expect(jobReplay.status).toBe(200);
    expect(jobReplay.headers.get('idempotency-replayed')).toBe('true');
    expect(jobReplay.body.job_id).toBe(jobId);
    const jobReused = await submit(jobKey, OTHER);
    expect([jobReused.status, jobReused.body.error]).toEqual([409, 'idempotency_key_reused']);

    // No second usage record, nothing more used or reserved.
    expect(await usage()).toEqual(records);
    expect(await quota()).toEqual({ used: 4, reserved: 0 });

    // The rotated gateway serves and charges a new key as usual (fingerprinted as v2).
    const fresh = await scrub(newKey(), OTHER);
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get('idempotency-replayed')).toBeNull();
    await expect.poll(quota, { timeout: 10_000 }).toEqual({ used: 6, reserved: 0 });
    await expectInvariants(stack, { canaries: NEEDLES });
  });
});
