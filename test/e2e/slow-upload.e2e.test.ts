import http from 'node:http';
import { admissionv1 } from '@dnc/proto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { v2 } from '../../services/job-scheduler/test/support/e2e.js';
import { expectInvariants } from '../support/invariants.js';
import { accountUsage, loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';

// Spec, POST /v2/scrub: "The 5-second admission budget covers authentication, validation, entitlement,
// quota reservation and enqueueing, not execution": not the client's upload. Found in a review (2026-12-05):
// the budget counted from the request's arrival, so a v2 body that took longer to arrive than the budget left
// admission no time, and the scheduler refused to store the job on every retry that uploaded as slowly. The
// v2 budget now leaves out the upload (up to 45 s; it was 10 s until a later review of the same day: an 8 MB
// body over a link slower than about 5 Mbit/s was still answered 503 on every try). v1 keeps its budget from
// the arrival: the spec has it answer within 15 seconds, and clients size their timeouts on that.
const BUDGET_MS = 1_500;
const UPLOAD_MS = 2_500;
/** Past the 10 s once left out plus the budget: answered 503 before (deadline.ts, UPLOAD_LEFT_OUT_MAX_MS). */
const LONG_UPLOAD_MS = 12_500;
const REGISTERED = '+57 300 123 4567';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
  elapsedMs: number;
}

/** A JSON POST whose body arrives in ten pieces spread over `uploadMs`, as from a slow link. */
function postSlowly(
  baseUrl: string,
  path: string,
  headers: Record<string, string>,
  json: unknown,
  uploadMs: number,
): Promise<Answer> {
  const bytes = Buffer.from(JSON.stringify(json));
  const pieces = 10;
  const size = Math.ceil(bytes.length / pieces);
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${baseUrl}${path}`,
      {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(bytes.length) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: text ? JSON.parse(text) : {},
            elapsedMs: Date.now() - started,
          });
        });
      },
    );
    req.on('error', reject);
    let i = 0;
    const next = () => {
      req.write(bytes.subarray(i * size, (i + 1) * size));
      i += 1;
      if (i < pieces) setTimeout(next, uploadMs / (pieces - 1));
      else req.end();
    };
    next();
  });
}

describe('a slow upload does not spend the v2 admission budget; v1 keeps its budget from the arrival', () => {
  let stack: TestStack;
  let org: SeededOrg;

  beforeAll(async () => {
    stack = await startTestStack({
      label: 'slowup',
      countries: ['co'],
      processEnv: {
        gateway: { DNC_V1_BUDGET_MS: String(BUDGET_MS), DNC_V2_ADMISSION_BUDGET_MS: String(BUDGET_MS) },
      },
    });
    org = await seedOrg(stack, ['co']);
    await loadRegistry(stack, 'co', [REGISTERED]);
  });
  afterEach(async () => {
    await expectInvariants(stack);
  });
  afterAll(async () => {
    await stack?.teardown();
  });

  const headers = (key: string) => ({ authorization: `Bearer ${org.apiKey}`, 'idempotency-key': key });
  const phones = [REGISTERED, '3109999999', 'not a number'];

  /** A v2 body uploaded over `uploadMs`: admitted once (202 queued), its job succeeds, one usage record. */
  async function submitSlowly(key: string, uploadMs: number) {
    const before = await accountUsage(stack, org.orgId, 'co');
    const res = await postSlowly(
      stack.baseUrl,
      '/v2/scrub',
      headers(key),
      { country: 'co', phones },
      uploadMs,
    );
    expect(res.elapsedMs).toBeGreaterThanOrEqual(uploadMs);
    expect([res.status, res.body.status]).toEqual([202, 'queued']);
    const api = v2(stack, () => org);
    const jobId = String(res.body.job_id);
    const done = await api.waitFor(jobId, (s) => s === 'succeeded');
    expect(done.body.status).toBe('succeeded');
    const after = await accountUsage(stack, org.orgId, 'co');
    // Charged once, for the job it ran.
    expect(after.records).toBe(before.records + 1);
    return { api, jobId, before, after };
  }

  it('v2: a body that takes longer than the admission budget to arrive is admitted once, and its job runs', async () => {
    const { api, jobId, before, after } = await submitSlowly(`slow-v2-${Date.now().toString(36)}`, UPLOAD_MS);
    const result = await api.result(jobId);
    expect(result.status).toBe(200);
    expect(result.body.prohibited_numbers_to_call).toEqual([REGISTERED]);
    expect(result.body.safe_numbers_to_call).toEqual(['3109999999']);
    expect(after.used).toBeGreaterThan(before.used);
  });

  it('v2: an upload longer than 10 s (past the bound it once had) is admitted once, and its job runs', async () => {
    await submitSlowly(`slower-v2-${Date.now().toString(36)}`, LONG_UPLOAD_MS);
  }, 60_000);

  // Spec, Authentication 3: a revoked key is 401. Found in a review (2026-12-05): the key was checked when the
  // request arrived, and a body that took up to 45 s to arrive was then admitted and charged on that check.
  it('v2: a key revoked while its body arrives admits nothing: 401 invalid_key, no rate-limit headers, uncharged', async () => {
    const revoked = await seedOrg(stack, ['co']);
    const before = await accountUsage(stack, revoked.orgId, 'co');
    const key = `revoked-v2-${Date.now().toString(36)}`;
    const answer = postSlowly(
      stack.baseUrl,
      '/v2/scrub',
      { authorization: `Bearer ${revoked.apiKey}`, 'idempotency-key': key },
      { country: 'co', phones },
      UPLOAD_MS,
    );
    const started = Date.now();
    await new Promise((r) => setTimeout(r, UPLOAD_MS / 4));
    // In process (a dnc-admin process may take longer to start than the upload has left on a loaded machine).
    const admin = stack.client(
      admissionv1.AdmissionAdminService,
      await stack.security('operator'),
      'admission',
      stack.addresses.admissionAdmin,
    );
    expect((await admin.revokeApiKey({ keyId: revoked.keyId })).apiKey?.revokedAt).toBeDefined();
    expect(Date.now() - started).toBeLessThan(UPLOAD_MS);
    const res = await answer;
    expect(res.elapsedMs).toBeGreaterThanOrEqual(UPLOAD_MS);
    expect([res.status, res.body]).toEqual([401, { error: 'invalid_key' }]);
    expect(Object.keys(res.headers).filter((h) => h.includes('ratelimit'))).toEqual([]);
    expect(res.headers['x-retention']).toBeDefined();
    expect(await accountUsage(stack, revoked.orgId, 'co')).toEqual(before);
  });

  it('v1: the budget counts from the arrival: a body slower than the budget is answered 503 at once, uncharged', async () => {
    const before = await accountUsage(stack, org.orgId, 'co');
    const key = `slow-v1-${Date.now().toString(36)}`;
    const res = await postSlowly(
      stack.baseUrl,
      '/v1/scrub',
      headers(key),
      { country: 'co', phones },
      UPLOAD_MS,
    );
    expect(res.status).toBe(503);
    expect(res.elapsedMs).toBeGreaterThanOrEqual(UPLOAD_MS);
    expect(res.elapsedMs).toBeLessThan(UPLOAD_MS + 1_000);
    expect(res.body).not.toHaveProperty('prohibited_numbers_to_call');
    await new Promise((r) => setTimeout(r, BUDGET_MS));
    expect(await accountUsage(stack, org.orgId, 'co')).toEqual(before);
  });
});
