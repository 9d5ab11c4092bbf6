import { buildOpenApiDocument } from '@dnc/api-contract';
import { describe, expect, it } from 'vitest';
import { createResponseValidator } from '../src/response-validator.js';

const validator = createResponseValidator(buildOpenApiDocument());
const JOB_ID = '2c0f4a52-6a3e-4bb4-8f0d-2a9e5f6a1b7c';
const BASE = 'http://127.0.0.1:8080';

const v1Headers = {
  'x-request-id': '6f1c2a9e-3b7d-4c1e-9f0a-5d2b8e7c4a10',
  'x-retention': 'zero',
  'cache-control': 'no-store, max-age=0',
  'content-type': 'application/json',
};
const v2Headers = {
  'x-request-id': 'client-chosen.id:1',
  'x-retention': 'transient-encrypted',
  'cache-control': 'no-store',
  'content-type': 'application/json; charset=utf-8',
};
const rateLimit = {
  'x-ratelimit-limit': '60',
  'x-ratelimit-remaining': '59',
  'x-ratelimit-reset': '1790000000',
  'ratelimit-limit': '60',
  'ratelimit-remaining': '59',
  'ratelimit-reset': '1790000000',
};
const result = {
  prohibited_numbers_to_call: ['3001234567'],
  safe_numbers_to_call: ['3001234568', '3001234568'],
  invalid_numbers: [{ input: 'x', reason: 'unparseable' }],
  summary: { total_checked: 4, prohibited_numbers: 1, safe_numbers: 2, invalid_numbers: 1 },
};
const job = (status: string, extra: Record<string, unknown> = {}) => ({
  job_id: JOB_ID,
  status,
  country: 'co',
  submitted_count: 4,
  created_at: '2026-11-21T10:00:00.000Z',
  status_url: `${BASE}/v2/scrub/${JOB_ID}`,
  result_url: `${BASE}/v2/scrub/${JOB_ID}/result`,
  cancel_url: `${BASE}/v2/scrub/${JOB_ID}/cancel`,
  expires_at: '2026-11-22T10:00:00.000Z',
  ...extra,
});

describe('createResponseValidator accepts documented responses', () => {
  it('accepts a v1 scrub result, a replay, health, ready and not-ready', () => {
    validator.assert({
      method: 'POST',
      route: '/v1/scrub',
      status: 200,
      headers: { ...v1Headers, ...rateLimit },
      body: result,
    });
    validator.assert({
      method: 'POST',
      route: '/v1/scrub',
      status: 200,
      headers: { ...v1Headers, ...rateLimit, 'idempotency-replayed': 'true' },
      body: result,
    });
    validator.assert({
      method: 'GET',
      route: '/v1/health',
      status: 200,
      headers: v1Headers,
      body: { ok: true },
    });
    validator.assert({
      method: 'GET',
      route: '/v1/ready',
      status: 200,
      headers: v1Headers,
      body: { ok: true },
    });
    validator.assert({
      method: 'GET',
      route: '/v1/ready',
      status: 503,
      headers: v1Headers,
      body: { ok: false, error: 'not_ready' },
    });
  });

  it('accepts the job lifecycle with concrete paths and a fetch Headers object', () => {
    validator.assert({
      method: 'POST',
      route: '/v2/scrub',
      status: 202,
      headers: new Headers({ ...v2Headers, ...rateLimit }),
      body: job('queued'),
    });
    validator.assert({
      method: 'GET',
      route: `/v2/scrub/${JOB_ID}`,
      status: 200,
      headers: { ...v2Headers, ...rateLimit, 'retry-after': '2' },
      body: job('running'),
    });
    validator.assert({
      method: 'GET',
      route: '/v2/scrub/{job_id}',
      status: 200,
      headers: { ...v2Headers, ...rateLimit },
      body: job('failed', { error: { error: 'country_service_maintenance', country: 'co' } }),
    });
    validator.assert({
      method: 'GET',
      route: `/v2/scrub/${JOB_ID}/result`,
      status: 200,
      headers: { ...v2Headers, ...rateLimit },
      body: result,
    });
    validator.assert({
      method: 'POST',
      route: `/v2/scrub/${JOB_ID}/cancel`,
      status: 202,
      headers: { ...v2Headers, ...rateLimit },
      body: job('running', { cancel_requested: true }),
    });
    validator.assert({
      method: 'POST',
      route: `/v2/scrub/${JOB_ID}/cancel`,
      status: 200,
      headers: { ...v2Headers, ...rateLimit },
      body: job('cancelled'),
    });
  });

  it('accepts documented errors, 405 with Allow and unknown-route 404', () => {
    validator.assert({
      method: 'POST',
      route: '/v1/scrub',
      status: 401,
      headers: v1Headers,
      body: { error: 'invalid_key' },
    });
    validator.assert({
      method: 'POST',
      route: '/v1/scrub',
      status: 429,
      headers: { ...v1Headers, ...rateLimit, 'retry-after': '30' },
      body: { error: 'rate_limit_exceeded', message: 'slow down' },
    });
    validator.assert({
      method: 'POST',
      route: '/v2/scrub',
      status: 429,
      headers: { ...v2Headers, ...rateLimit },
      body: { error: 'customer_quota_exceeded' },
    });
    validator.assert({
      method: 'DELETE',
      route: '/v1/scrub',
      status: 405,
      headers: { ...v1Headers, allow: 'POST' },
      body: { error: 'method_not_allowed' },
    });
    validator.assert({
      method: 'GET',
      route: '/v3/nothing',
      status: 404,
      headers: {},
      body: { error: 'not_found' },
    });
    validator.assert({
      method: 'GET',
      route: `/v2/scrub/${JOB_ID}/result`,
      status: 410,
      headers: { ...v2Headers, ...rateLimit },
      body: { error: 'job_result_expired' },
    });
  });
});

describe('createResponseValidator rejects what the document does not say', () => {
  const problems = (response: Parameters<typeof validator.check>[0]) => validator.check(response).join('\n');

  it('an undocumented status', () => {
    expect(
      problems({
        method: 'GET',
        route: '/v1/health',
        status: 500,
        headers: v1Headers,
        body: { error: 'internal_error' },
      }),
    ).toMatch(/undocumented status 500/);
    expect(() =>
      validator.assert({
        method: 'POST',
        route: '/v1/scrub',
        status: 404,
        headers: v1Headers,
        body: { error: 'job_not_found' },
      }),
    ).toThrow(
      /Response does not match the OpenAPI document:\n {2}POST \/v1\/scrub -> 404: undocumented status 404/,
    );
  });

  it('an undocumented field, a retired field name, a wrong code for the status', () => {
    expect(
      problems({
        method: 'POST',
        route: '/v1/scrub',
        status: 200,
        headers: { ...v1Headers, ...rateLimit },
        body: { ...result, stats: {} },
      }),
    ).toMatch(/undocumented field 'stats'/);
    expect(
      problems({
        method: 'GET',
        route: `/v2/scrub/${JOB_ID}`,
        status: 200,
        headers: { ...v2Headers, ...rateLimit },
        body: job('queued', { provider: 'x' }),
      }),
    ).toMatch(/undocumented field 'provider'/);
    expect(
      problems({
        method: 'POST',
        route: '/v1/scrub',
        status: 403,
        headers: { ...v1Headers, ...rateLimit },
        body: { error: 'invalid_key' },
      }),
    ).toMatch(/body.error: must be one of/);
    expect(
      problems({
        method: 'POST',
        route: '/v1/scrub',
        status: 200,
        headers: { ...v1Headers, ...rateLimit },
        body: { ...result, invalid_numbers: [{ input: 'x', reason: 'bad' }] },
      }),
    ).toMatch(/body.invalid_numbers.0.reason/);
  });

  it('a missing or wrong header, rate-limit headers on a 401, Retry-After rules per code', () => {
    expect(
      problems({
        method: 'POST',
        route: '/v1/scrub',
        status: 200,
        headers: { ...rateLimit, 'cache-control': 'no-store, max-age=0' },
        body: result,
      }),
    ).toMatch(/missing header x-retention/);
    const { 'x-request-id': _id, ...withoutRequestId } = v1Headers;
    expect(
      problems({
        method: 'GET',
        route: '/v1/health',
        status: 200,
        headers: withoutRequestId,
        body: { ok: true },
      }),
    ).toMatch(/missing header X-Request-Id/);
    expect(
      problems({
        method: 'POST',
        route: '/v2/scrub',
        status: 202,
        headers: { ...v1Headers, ...rateLimit },
        body: job('queued'),
      }),
    ).toMatch(/header x-retention: must be one of \["transient-encrypted"\]/);
    expect(
      problems({ method: 'POST', route: '/v1/scrub', status: 200, headers: v1Headers, body: result }),
    ).toMatch(/missing header X-RateLimit-Limit/);
    expect(
      problems({
        method: 'POST',
        route: '/v1/scrub',
        status: 401,
        headers: { ...v1Headers, ...rateLimit },
        body: { error: 'invalid_key' },
      }),
    ).toMatch(/header X-RateLimit-Limit must not be present/);
    expect(
      problems({
        method: 'POST',
        route: '/v1/scrub',
        status: 429,
        headers: { ...v1Headers, ...rateLimit },
        body: { error: 'rate_limit_exceeded' },
      }),
    ).toMatch(/rate_limit_exceeded requires a Retry-After header/);
    expect(
      problems({
        method: 'POST',
        route: '/v1/scrub',
        status: 429,
        headers: { ...v1Headers, ...rateLimit, 'retry-after': '5' },
        body: { error: 'customer_quota_exceeded' },
      }),
    ).toMatch(/customer_quota_exceeded must not carry Retry-After/);
    expect(
      problems({
        method: 'POST',
        route: '/v1/scrub',
        status: 409,
        headers: { ...v1Headers, ...rateLimit, 'retry-after': '0' },
        body: { error: 'idempotency_request_in_progress' },
      }),
    ).toMatch(/header Retry-After: must be >= 1/);
    expect(
      problems({
        method: 'PUT',
        route: '/v1/scrub',
        status: 405,
        headers: v1Headers,
        body: { error: 'method_not_allowed' },
      }),
    ).toMatch(/missing header Allow/);
  });

  it('broken invariants: summary arithmetic, error on a non-failed job, wrong urls', () => {
    expect(
      problems({
        method: 'POST',
        route: '/v1/scrub',
        status: 200,
        headers: { ...v1Headers, ...rateLimit },
        body: { ...result, summary: { ...result.summary, total_checked: 3 } },
      }),
    ).toMatch(/total_checked is not prohibited \+ safe \+ invalid/);
    expect(
      problems({
        method: 'GET',
        route: `/v2/scrub/${JOB_ID}`,
        status: 200,
        headers: { ...v2Headers, ...rateLimit },
        body: job('cancelled', { error: { error: 'platform_failure' } }),
      }),
    ).toMatch(/a cancelled job must not carry error/);
    expect(
      problems({
        method: 'GET',
        route: `/v2/scrub/${JOB_ID}`,
        status: 200,
        headers: { ...v2Headers, ...rateLimit },
        body: job('failed'),
      }),
    ).toMatch(/a failed job must carry error/);
    expect(
      problems({
        method: 'GET',
        route: `/v2/scrub/${JOB_ID}`,
        status: 200,
        headers: { ...v2Headers, ...rateLimit },
        body: job('running', { job_id: JOB_ID.toUpperCase() }),
      }),
    ).toMatch(/body.job_id: must match pattern/);
  });

  it('an unknown route that is not a 404 not_found, a supported method that got 405', () => {
    expect(
      problems({ method: 'GET', route: '/v1/scrubs', status: 200, headers: {}, body: { ok: true } }),
    ).toMatch(/expected 404 not_found/);
    expect(
      problems({
        method: 'DELETE',
        route: '/v1/scrub',
        status: 404,
        headers: {},
        body: { error: 'not_found' },
      }),
    ).toMatch(/expected 405/);
  });

  it('never echoes body values in its messages', () => {
    const secret = '+525512345678';
    const text = problems({
      method: 'POST',
      route: '/v1/scrub',
      status: 200,
      headers: { ...v1Headers, ...rateLimit },
      body: { ...result, invalid_numbers: [{ input: secret, reason: secret }] },
    });
    expect(text).not.toBe('');
    expect(text).not.toContain(secret);
  });
});

describe('createResponseValidator JobError rules', () => {
  it('a country JobError without its country', () => {
    const problems = validator.check({
      method: 'GET',
      route: `/v2/scrub/${JOB_ID}`,
      status: 200,
      headers: { ...v2Headers, ...rateLimit },
      body: job('failed', { error: { error: 'country_service_temporarily_unavailable' } }),
    });
    expect(problems.join('\n')).toMatch(/a country JobError must carry its country/);
  });
});

describe('assertFetchResponse', () => {
  it('reads, checks and returns the body of a fetch Response', async () => {
    const ok = new Response(JSON.stringify({ ok: true }), { status: 200, headers: v1Headers });
    await expect(validator.assertFetchResponse('GET', '/v1/health', ok)).resolves.toEqual({ ok: true });
    const html = new Response('<html>', { status: 200, headers: v1Headers });
    await expect(validator.assertFetchResponse('GET', '/v1/health', html)).rejects.toThrow(
      /the body is not JSON/,
    );
    const missing = new Response(JSON.stringify({ ok: true }), {
      status: 200,
      headers: { 'content-type': 'application/json' },
    });
    await expect(validator.assertFetchResponse('GET', '/v1/health', missing)).rejects.toThrow(
      /missing header x-retention/,
    );
  });
});
