import { afterEach, describe, expect, it } from 'vitest';
import {
  DncApiError,
  DncClient,
  DncConnectionError,
  DncJobError,
  DncWaitTimeoutError,
} from '../src/index.js';
import { type Scripted, sequence, startScriptedServer } from './scripted-server.js';

const JOB_ID = '2c0f4a52-6a3e-4bb4-8f0d-2a9e5f6a1b7c';
const result = {
  prohibited_numbers_to_call: ['3001234567'],
  safe_numbers_to_call: [],
  invalid_numbers: [],
  summary: { total_checked: 1, prohibited_numbers: 1, safe_numbers: 0, invalid_numbers: 0 },
};
const job = (status: string, extra: Record<string, unknown> = {}) => ({
  job_id: JOB_ID,
  status,
  country: 'co',
  submitted_count: 1,
  created_at: '2026-11-21T10:00:00.000Z',
  status_url: `http://x/v2/scrub/${JOB_ID}`,
  result_url: `http://x/v2/scrub/${JOB_ID}/result`,
  cancel_url: `http://x/v2/scrub/${JOB_ID}/cancel`,
  expires_at: '2026-11-22T10:00:00.000Z',
  ...extra,
});
const request = { country: 'co' as const, phones: ['3001234567'] };
const err = (status: number, error: string, headers?: Record<string, string>): Scripted => ({
  status,
  body: { error, message: `because ${error}` },
  ...(headers ? { headers } : {}),
});

let server: Awaited<ReturnType<typeof startScriptedServer>> | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function clientFor(
  script: Parameters<typeof startScriptedServer>[0],
  options: { maxRetries?: number; maxRetryAfterMs?: number } = {},
) {
  server = await startScriptedServer(script);
  const client = new DncClient({
    apiKey: 'test-key-not-secret',
    baseUrl: `${server.baseUrl}/`,
    retryBaseDelayMs: 10,
    retryMaxDelayMs: 40,
    ...options,
  });
  return { client, calls: server.calls };
}

describe('DncClient.scrub (v1)', () => {
  it('sends the Bearer key, JSON body and a generated UUID Idempotency-Key', async () => {
    const { client, calls } = await clientFor(sequence({ status: 200, body: result }));
    await expect(client.scrub(request)).resolves.toEqual(result);
    expect(calls).toHaveLength(1);
    const [call] = calls;
    expect(call?.method).toBe('POST');
    expect(call?.url).toBe('/v1/scrub');
    expect(call?.headers['authorization']).toBe('Bearer test-key-not-secret');
    expect(call?.headers['content-type']).toBe('application/json');
    expect(call?.headers['idempotency-key']).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(JSON.parse(call?.body ?? '')).toEqual(request);
  });

  it('retries 503 with the same key, bounded exponential backoff', async () => {
    const { client, calls } = await clientFor(
      sequence(err(503, 'platform_failure'), err(503, 'country_service_temporarily_unavailable'), {
        status: 200,
        body: result,
      }),
    );
    await expect(client.scrub(request)).resolves.toEqual(result);
    expect(calls).toHaveLength(3);
    expect(new Set(calls.map((c) => c.headers['idempotency-key'])).size).toBe(1);
  });

  it('a Retry-After of 0, or the same 1 s again, still backs off exponentially (never sooner than the backoff)', async () => {
    const { client, calls } = await clientFor(
      sequence(
        err(503, 'platform_failure', { 'retry-after': '0' }),
        err(503, 'platform_failure', { 'retry-after': '0' }),
        err(503, 'platform_failure', { 'retry-after': '0' }),
        { status: 200, body: result },
      ),
    );
    // Backoff base 10 ms, cap 40 ms: at least 5, 10, 20 ms between the attempts (equal jitter).
    await expect(client.scrub(request)).resolves.toEqual(result);
    const gaps = calls.slice(1).map((c, i) => c.at - calls[i]!.at);
    expect(gaps[0]).toBeGreaterThanOrEqual(5);
    expect(gaps[1]).toBeGreaterThanOrEqual(10);
    expect(gaps[2]).toBeGreaterThanOrEqual(20);
  });

  it('an answer cut short is retried with the same key; given up, the error carries the key', async () => {
    const cut = { status: 200, body: result, cut: true } as const;
    const { client, calls } = await clientFor(sequence(cut, { status: 200, body: result }));
    await expect(client.scrub(request, { idempotencyKey: 'order-43' })).resolves.toEqual(result);
    expect(calls.map((c) => c.headers['idempotency-key'])).toEqual(['order-43', 'order-43']);
    await server!.close();

    const always = await clientFor(sequence(cut), { maxRetries: 2 });
    const error = await always.client.jobs.create(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DncConnectionError);
    expect(error).toMatchObject({ message: 'POST /v2/scrub: the answer was cut short' });
    expect((error as DncConnectionError).idempotencyKey).toBe(always.calls[0]!.headers['idempotency-key']);
    expect(always.calls).toHaveLength(3);
  });

  it('gives up after maxRetries and throws the last error', async () => {
    const { client, calls } = await clientFor(sequence(err(503, 'platform_failure')), { maxRetries: 3 });
    const error = await client.scrub(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DncApiError);
    expect(error).toMatchObject({
      status: 503,
      code: 'platform_failure',
      message: 'because platform_failure',
    });
    expect(calls).toHaveLength(4);
  });

  it('honors Retry-After on 429 rate_limit_exceeded and 409 idempotency_request_in_progress, same key', async () => {
    const { client, calls } = await clientFor(
      sequence(
        err(429, 'rate_limit_exceeded', { 'retry-after': '1' }),
        err(409, 'idempotency_request_in_progress', { 'retry-after': '1' }),
        { status: 200, body: result, headers: { 'idempotency-replayed': 'true' } },
      ),
    );
    await client.scrub(request, { idempotencyKey: 'order-42' });
    expect(calls.map((c) => c.headers['idempotency-key'])).toEqual(['order-42', 'order-42', 'order-42']);
    const [a, b, c] = calls.map((call) => call.at) as [number, number, number];
    expect(b - a).toBeGreaterThanOrEqual(1000);
    expect(b - a).toBeLessThan(2500);
    expect(c - b).toBeGreaterThanOrEqual(1000);
  });

  it.each([
    [400, 'validation_error'],
    [401, 'invalid_key'],
    [402, 'subscription_inactive'],
    [403, 'account_suspended'],
    [403, 'activation_incomplete'],
    [403, 'country_not_in_plan'],
    [409, 'idempotency_key_reused'],
    [413, 'payload_too_large'],
    [429, 'customer_quota_exceeded'],
    [500, 'internal_error'],
  ])('does not retry %i %s', async (status, code) => {
    const { client, calls } = await clientFor(
      sequence(err(status, code, { 'retry-after': '1' }), { status: 200, body: result }),
    );
    const error = await client.scrub(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DncApiError);
    expect(error).toMatchObject({ status, code, retryAfter: 1 });
    expect(calls).toHaveLength(1);
  });

  it('does not follow a redirect: the key goes only to the base address (spec, Authentication 2)', async () => {
    const elsewhere = await startScriptedServer(sequence({ status: 200, body: result }));
    try {
      const { client, calls } = await clientFor(
        sequence({ status: 307, headers: { location: `${elsewhere.baseUrl}/v1/scrub` } }),
      );
      const error = await client.scrub(request).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DncApiError);
      expect(error).toMatchObject({ status: 307, code: 'unexpected_response' });
      expect(calls).toHaveLength(1);
      expect(elsewhere.calls).toHaveLength(0);
    } finally {
      await elsewhere.close();
    }
  });

  it('retries a dropped connection on POST with the same key', async () => {
    const { client, calls } = await clientFor(
      sequence({ drop: true }, { drop: true }, { status: 200, body: result }),
    );
    await expect(client.scrub(request)).resolves.toEqual(result);
    expect(calls).toHaveLength(3);
    expect(new Set(calls.map((c) => c.headers['idempotency-key'])).size).toBe(1);
  });

  it('reports an unreachable service as DncConnectionError after the retries', async () => {
    const { client, calls } = await clientFor(sequence({ drop: true }), { maxRetries: 2 });
    await expect(client.scrub(request)).rejects.toBeInstanceOf(DncConnectionError);
    expect(calls).toHaveLength(3);
  });

  it('does not wait for a Retry-After beyond maxRetryAfterMs', async () => {
    server = await startScriptedServer(sequence(err(429, 'rate_limit_exceeded', { 'retry-after': '60' })));
    const client = new DncClient({ apiKey: 'k', baseUrl: server.baseUrl, maxRetryAfterMs: 5_000 });
    const started = Date.now();
    await expect(client.scrub(request)).rejects.toMatchObject({
      code: 'rate_limit_exceeded',
      retryAfter: 60,
    });
    expect(Date.now() - started).toBeLessThan(1000);
    expect(server.calls).toHaveLength(1);
  });

  it('rejects an invalid idempotency key before any call', async () => {
    const { client, calls } = await clientFor(sequence({ status: 200, body: result }));
    await expect(client.scrub(request, { idempotencyKey: 'has space' })).rejects.toBeInstanceOf(TypeError);
    expect(calls).toHaveLength(0);
  });

  it('an AbortSignal stops a Retry-After wait at once', async () => {
    const controller = new AbortController();
    const { client, calls } = await clientFor(() => {
      // Abort while the client sleeps on Retry-After: 5, i.e. after the answer was sent.
      setTimeout(() => controller.abort(), 50);
      return err(503, 'platform_failure', { 'retry-after': '5' });
    });
    const started = Date.now();
    await expect(client.scrub(request, { signal: controller.signal })).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(Date.now() - started).toBeLessThan(1000);
    expect(calls).toHaveLength(1);
  });

  it('a success whose body is not JSON is an unknown outcome: asked again with the same key', async () => {
    const { client, calls } = await clientFor(
      sequence({ status: 200, body: undefined }, { status: 200, body: result }),
    );
    await expect(client.scrub(request)).resolves.toEqual(result);
    expect(calls).toHaveLength(2);
    expect(calls[1]!.headers['idempotency-key']).toBe(calls[0]!.headers['idempotency-key']);
    const always = await clientFor(() => ({ status: 200, body: undefined }), { maxRetries: 1 });
    const error = await always.client.scrub(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DncConnectionError);
    expect((error as DncConnectionError).idempotencyKey).toBe(always.calls[0]!.headers['idempotency-key']);
    // A read stays final: a host answering every path with a page would keep a wait polling for a day.
    const page = await clientFor(() => ({ status: 200, body: undefined }));
    await expect(page.client.jobs.get(JOB_ID)).rejects.toMatchObject({ code: 'unexpected_response' });
    expect(page.calls).toHaveLength(1);
  });

  it('maps a non-JSON error body to unexpected_response', async () => {
    const { client } = await clientFor(sequence({ status: 502, body: undefined }), { maxRetries: 0 });
    await expect(client.scrub(request)).rejects.toMatchObject({ status: 502, code: 'unexpected_response' });
  });
});

describe('DncClient.jobs (v2)', () => {
  it('create, get, result and cancel use the documented methods and paths; only create sends a key', async () => {
    const { client, calls } = await clientFor((call) => {
      if (call.url === '/v2/scrub') return { status: 202, body: job('queued') };
      if (call.url.endsWith('/result')) return { status: 200, body: result };
      if (call.url.endsWith('/cancel')) return { status: 200, body: job('cancelled') };
      return { status: 200, body: job('running') };
    });
    expect((await client.jobs.create(request)).status).toBe('queued');
    expect((await client.jobs.get(JOB_ID)).status).toBe('running');
    expect(await client.jobs.result(JOB_ID)).toEqual(result);
    expect((await client.jobs.cancel(JOB_ID)).status).toBe('cancelled');
    expect(calls.map((c) => `${c.method} ${c.url}`)).toEqual([
      'POST /v2/scrub',
      `GET /v2/scrub/${JOB_ID}`,
      `GET /v2/scrub/${JOB_ID}/result`,
      `POST /v2/scrub/${JOB_ID}/cancel`,
    ]);
    expect(calls.map((c) => c.headers['idempotency-key'] !== undefined)).toEqual([true, false, false, false]);
  });

  it('does not retry 409 job_result_not_ready nor 404 job_not_found', async () => {
    const { client, calls } = await clientFor((call) =>
      call.url.endsWith('/result')
        ? err(409, 'job_result_not_ready', { 'retry-after': '1' })
        : err(404, 'job_not_found'),
    );
    await expect(client.jobs.result(JOB_ID)).rejects.toMatchObject({
      status: 409,
      code: 'job_result_not_ready',
    });
    await expect(client.jobs.get(JOB_ID)).rejects.toMatchObject({ status: 404, code: 'job_not_found' });
    expect(calls).toHaveLength(2);
  });

  it('wait polls with backoff until terminal, reports progress, honors Retry-After on the status', async () => {
    const { client, calls } = await clientFor(
      sequence(
        { status: 200, body: job('queued') },
        { status: 200, body: job('running'), headers: { 'retry-after': '1' } },
        { status: 200, body: job('running') },
        { status: 200, body: job('succeeded') },
      ),
    );
    const seen: string[] = [];
    const done = await client.jobs.wait(JOB_ID, {
      pollIntervalMs: 20,
      onProgress: (j) => seen.push(j.status),
    });
    expect(done.status).toBe('succeeded');
    expect(seen).toEqual(['queued', 'running', 'running', 'succeeded']);
    expect(calls).toHaveLength(4);
    const at = calls.map((c) => c.at) as [number, number, number, number];
    expect(at[1] - at[0]).toBeGreaterThanOrEqual(15);
    expect(at[2] - at[1]).toBeGreaterThanOrEqual(1000);
    expect(at[3] - at[2]).toBeLessThan(900);
  });

  it('wait is bounded by maxWaitMs', async () => {
    const { client, calls } = await clientFor(sequence({ status: 200, body: job('running') }));
    const started = Date.now();
    const error = await client.jobs
      .wait(JOB_ID, { pollIntervalMs: 20, maxWaitMs: 200 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DncWaitTimeoutError);
    expect((error as DncWaitTimeoutError).job.status).toBe('running');
    expect(Date.now() - started).toBeLessThan(1500);
    expect(calls.length).toBeGreaterThan(2);
    expect(calls.length).toBeLessThan(15);
  });

  // Found by a review (2026-12-03): each poll was one call with its own retries, and any error ended the
  // wait: 8-16 s of 503s (a rolling deploy, an outage) in a 3-hour job failed `jobs.run` and `dnc scrub`.
  it('wait rides out polls that fail for a while (503 past their retries, no answer), and still stops at a 404', async () => {
    const { client, calls } = await clientFor(
      sequence(
        { status: 200, body: job('running') },
        err(503, 'platform_failure'),
        err(503, 'platform_failure'),
        err(503, 'platform_failure'),
        err(429, 'temporarily_blocked', { 'retry-after': '1' }),
        { status: 200, body: job('succeeded') },
      ),
      { maxRetries: 1, maxRetryAfterMs: 100 },
    );
    const started = Date.now();
    const done = await client.jobs.wait(JOB_ID, { pollIntervalMs: 20 });
    expect(done.status).toBe('succeeded');
    expect(calls).toHaveLength(6);
    // The block's Retry-After (1 s, past what one call waits for) is honored between polls.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);

    await server!.close();
    const gone = await clientFor(sequence(err(404, 'job_not_found')), { maxRetries: 1 });
    const error = await gone.client.jobs.wait(JOB_ID, { pollIntervalMs: 20 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'DncApiError', code: 'job_not_found' });
    expect(gone.calls).toHaveLength(1);
  });

  it("wait's timeoutMs bounds the whole wait, as for every call (DncTimeoutError)", async () => {
    const { client, calls } = await clientFor(sequence({ status: 200, body: job('running') }));
    const started = Date.now();
    const error = await client.jobs
      .wait(JOB_ID, { pollIntervalMs: 20, maxPollIntervalMs: 40, timeoutMs: 300 })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'DncTimeoutError', code: 'timeout' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(Date.now() - started).toBeLessThan(1500);
    expect(calls.length).toBeGreaterThan(2);
  });

  it('an AbortSignal cancels a wait between polls', async () => {
    const controller = new AbortController();
    const { client, calls } = await clientFor(() => {
      // Abort while the client sleeps before its next poll.
      setTimeout(() => controller.abort(), 50);
      return { status: 200, body: job('running') };
    });
    const started = Date.now();
    await expect(
      client.jobs.wait(JOB_ID, { pollIntervalMs: 5_000, signal: controller.signal }),
    ).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(Date.now() - started).toBeLessThan(1000);
    expect(calls).toHaveLength(1);
  });

  it('run returns the result of a succeeded job and throws DncJobError for a failed one', async () => {
    let outcome = 'succeeded';
    const { client } = await clientFor((call) => {
      if (call.url === '/v2/scrub') return { status: 202, body: job('queued') };
      if (call.url.endsWith('/result')) return { status: 200, body: result };
      return outcome === 'succeeded'
        ? { status: 200, body: job('succeeded') }
        : {
            status: 200,
            body: job('failed', { error: { error: 'country_service_maintenance', country: 'co' } }),
          };
    });
    await expect(client.jobs.run(request, { pollIntervalMs: 10 })).resolves.toEqual(result);
    outcome = 'failed';
    const error = await client.jobs.run(request, { pollIntervalMs: 10 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DncJobError);
    expect(error).toMatchObject({ code: 'country_service_maintenance' });
  });

  // Found by a review (2026-12-05): an error after the job was created (here a poll answered 500) came
  // without the key, and retrying as the README shows (`create(..., { idempotencyKey: error.idempotencyKey })`)
  // sent a new key: a second job, charged again. It now carries the key the job was created with.
  it('run: an error after the job was created carries its key; run again with it, the same job', async () => {
    let polls = 0;
    const { client, calls } = await clientFor((call) => {
      if (call.url === '/v2/scrub') return { status: 202, body: job('queued') };
      if (call.url.endsWith('/result')) return { status: 200, body: result };
      polls += 1;
      return polls === 1
        ? { status: 500, body: { error: 'internal_error' } }
        : { status: 200, body: job('succeeded') };
    });
    const error = await client.jobs.run(request, { pollIntervalMs: 10 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DncApiError);
    const sent = calls[0]!.headers['idempotency-key'];
    expect(sent).toEqual(expect.any(String));
    expect((error as DncApiError).idempotencyKey).toBe(sent);
    await expect(
      client.jobs.run(request, {
        pollIntervalMs: 10,
        idempotencyKey: (error as DncApiError).idempotencyKey!,
      }),
    ).resolves.toEqual(result);
    expect(calls.filter((c) => c.url === '/v2/scrub').map((c) => c.headers['idempotency-key'])).toEqual([
      sent,
      sent,
    ]);
    // The wait that runs out carries it too.
    const running = await clientFor((call) =>
      call.url === '/v2/scrub' ? { status: 202, body: job('queued') } : { status: 200, body: job('running') },
    );
    const waited = await running.client.jobs
      .run(request, { pollIntervalMs: 10, maxWaitMs: 30, idempotencyKey: 'order-77' })
      .catch((e: unknown) => e);
    expect(waited).toBeInstanceOf(DncWaitTimeoutError);
    expect((waited as DncWaitTimeoutError).idempotencyKey).toBe('order-77');
  });

  it('a failed or expired job without its JobError is never reported as a cancellation', () => {
    expect(new DncJobError(job('failed') as never).code).toBe('platform_failure');
    expect(new DncJobError(job('expired') as never).code).toBe('job_expired');
    expect(new DncJobError(job('cancelled') as never).code).toBe('job_cancelled');
  });
});
