import { type AddressInfo, connect } from 'node:net';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { createLogger, HealthState, Registry } from '@dnc/kit';
import { jobsv1 } from '@dnc/proto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { gatewayConfig } from '../src/config.js';
import { inMemoryUpstream, job } from './support/upstream.js';

// Found by `npm run fuzz` (issue 15): answers the OpenAPI document did not allow.
describe('requests the fuzzer sent', () => {
  let app: FastifyInstance;
  const id = '0b0b0b0b-0000-4000-8000-00000000000f';
  beforeAll(async () => {
    const logger = createLogger('gateway-test', 'silent');
    app = await buildApp({
      config: gatewayConfig.parse({ DNC_FINGERPRINT_SECRET: 'test-secret-0123456789' }),
      upstream: inMemoryUpstream({ getJob: () => job(id, jobsv1.JobStatus.SUCCEEDED) }).upstream,
      health: new HealthState(logger),
      logger,
      metrics: new Registry(),
    });
  });
  afterAll(async () => {
    await app.close();
  });

  /** A keyed scrub POST with these headers on top. */
  const scrubPost = (url: string, headers: Record<string, string>, payload: string | Buffer | Readable) =>
    app.inject({
      method: 'POST',
      url,
      headers: { authorization: 'Bearer k', 'idempotency-key': 'k1', ...headers },
      payload,
    });

  // Found by a review (2026-12-03): the router takes a path with escapes of unreserved characters
  // (`/v%31/scrub`) and an absolute-form target (`http://host/v1/health`) as their plain path, but the hooks
  // read the raw URL: the answer lost x-retention and Cache-Control, and a wrong method was 404, not 405.
  it('an escaped or absolute-form path is answered as its plain path: retention headers, 405 with Allow', async () => {
    for (const url of ['/v%31/health', '/%76%31/health', '/v%31/health?x=%31']) {
      const r = await app.inject({ method: 'GET', url });
      expect(r.statusCode, url).toBe(200);
      expect(r.headers['x-retention'], url).toBe('zero');
      expect(r.headers['cache-control'], url).toBe('no-store, max-age=0');
    }
    const wrong = await app.inject({ method: 'DELETE', url: '/v%31/scrub' });
    expect(wrong.statusCode).toBe(405);
    expect(wrong.headers.allow).toBe('POST');
    expect(wrong.headers['x-retention']).toBe('zero');
    const v2 = await app.inject({
      method: 'GET',
      url: `/v%32/scrub/${id}`,
      headers: { authorization: 'Bearer k' },
    });
    expect(v2.statusCode).toBe(200);
    expect(v2.headers['x-retention']).toBe('transient-encrypted');

    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as AddressInfo;
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () =>
        socket.write(
          'GET http://api.example.com/v1/health HTTP/1.1\r\nHost: api.example.com\r\nConnection: close\r\n\r\n',
        ),
      );
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk.toString('latin1');
      });
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer.toLowerCase()).toContain('\r\nx-retention: zero\r\n');
    expect(answer.toLowerCase()).toContain('\r\ncache-control: no-store, max-age=0\r\n');
  });

  it('a job id that is not valid percent-encoding is 404 job_not_found (was 400)', async () => {
    for (const url of ['/v2/scrub/%E9', '/v2/scrub/%E9/result', '/v2/scrub/%/cancel']) {
      const r = await app.inject({
        method: url.endsWith('cancel') ? 'POST' : 'GET',
        url,
        headers: { authorization: 'Bearer k' },
      });
      expect(r.statusCode, url).toBe(404);
      expect(r.json()).toEqual({ error: 'job_not_found' });
      expect(r.headers['x-retention']).toBe('transient-encrypted');
    }
    const other = await app.inject({ method: 'GET', url: '/v3/%E9' });
    expect(other.statusCode).toBe(404);
    expect(other.json().error).toBe('not_found');
  });

  // Found by the fuzz smoke (seed 251811574): a path that is not valid percent-encoding was answered before
  // the request's hooks ran, so without X-Request-Id, rate-limit headers or the 405 of its path.
  it('a job path that is not valid percent-encoding goes through the same hooks as any other id', async () => {
    const headers = { authorization: 'Bearer k', 'x-request-id': 'fuzz-1' };
    for (const [method, suffix] of [
      ['GET', ''],
      ['GET', '/result'],
      ['POST', '/cancel'],
    ] as const) {
      const bad = await app.inject({ method, url: `/v2/scrub/%E9${suffix}`, headers });
      const missing = await app.inject({ method, url: `/v2/scrub/not-an-id${suffix}`, headers });
      expect(bad.statusCode, suffix).toBe(404);
      expect(bad.headers['x-request-id']).toBe('fuzz-1');
      const { date: _d1, ...badHeaders } = bad.headers;
      const { date: _d2, ...missingHeaders } = missing.headers;
      expect(badHeaders).toEqual(missingHeaders);
      expect(bad.body).toBe(missing.body);
    }
    const options = await app.inject({ method: 'OPTIONS', url: '/v2/scrub/%E9/result', headers });
    expect(options.statusCode).toBe(405);
    expect(options.json()).toEqual({ error: 'method_not_allowed', message: expect.any(String) });
    expect(options.headers.allow).toBe('GET');
    expect(options.headers['x-request-id']).toBe('fuzz-1');
    const root = await app.inject({ method: 'GET', url: '/v1/scrub%E9', headers });
    expect(root.statusCode).toBe(404);
    expect(root.headers['x-request-id']).toBe('fuzz-1');
  });

  // Found by a review (2026-12-03): the router gives up on a path parameter over 100 characters (its
  // default `maxParamLength`), and the gateway answered such a job id 500 internal_error before any hook
  // ran: no 401 for a request without a key, no rate-limit headers, no 405 for a wrong method.
  it('a job id of any length is an unknown job: 404 job_not_found through every hook, 405 for a wrong method', async () => {
    const headers = { authorization: 'Bearer k', 'x-request-id': 'long-1' };
    for (const length of [100, 101, 4_000]) {
      const long = 'a'.repeat(length);
      for (const [method, suffix] of [
        ['GET', ''],
        ['GET', '/result'],
        ['POST', '/cancel'],
      ] as const) {
        const url = `/v2/scrub/${long}${suffix}`;
        const keyed = await app.inject({ method, url, headers });
        const missing = await app.inject({ method, url: `/v2/scrub/not-an-id${suffix}`, headers });
        expect(keyed.statusCode, `${length}${suffix}`).toBe(404);
        expect(keyed.json()).toEqual({ error: 'job_not_found' });
        // Through the same hooks (authentication, request id, header policy) as any unknown id.
        const { date: _d1, ...keyedHeaders } = keyed.headers;
        const { date: _d2, ...missingHeaders } = missing.headers;
        expect(keyedHeaders).toEqual(missingHeaders);
      }
      const wrong = await app.inject({ method: 'POST', url: `/v2/scrub/${long}`, headers });
      expect(wrong.statusCode).toBe(405);
      expect(wrong.headers.allow).toBe('GET');
      expect(wrong.headers['x-retention']).toBe('transient-encrypted');
    }
  });

  it('a cancel that carries a body without a media type is answered, not refused with 400 (the route takes no body)', async () => {
    const r = await app.inject({
      method: 'POST',
      url: `/v2/scrub/${id}/cancel`,
      headers: { authorization: 'Bearer k', 'content-type': 'text/plain' },
      payload: 'x',
    });
    expect(r.statusCode).not.toBe(400);
  });

  it('a method the path does not support is 405 even with a broken JSON body (was 400)', async () => {
    const r = await app.inject({
      method: 'DELETE',
      url: '/v2/scrub',
      headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
      payload: '{"country":',
    });
    expect(r.statusCode).toBe(405);
    expect(r.headers['allow']).toBe('POST');
  });

  it('a scrub body of any other media type is still 400 (only JSON is accepted)', async () => {
    const r = await app.inject({
      method: 'POST',
      url: '/v2/scrub',
      headers: { authorization: 'Bearer k', 'idempotency-key': 'k1', 'content-type': 'text/csv' },
      payload: '3001234567',
    });
    expect(r.statusCode).toBe(400);
    expect(r.json().error).toBe('validation_error');
  });

  // Found by a spec review (2026-12-03): a non-JSON body over 64 KiB was 413 "The body exceeds 26,214,400
  // bytes." (false: the spec's 413 is for over 25 MiB); it is an invalid body, 400, whatever its size.
  it.each([
    ['declared length', { 'content-length': String(100_000) }],
    ['chunked', { 'transfer-encoding': 'chunked' }],
  ])(
    'a scrub body of another media type over 64 KiB is 400 too (%s), not a false 413',
    async (_, framing) => {
      for (const url of ['/v1/scrub', '/v2/scrub']) {
        const r = await scrubPost(
          url,
          { 'content-type': 'text/csv', ...framing },
          Readable.from([Buffer.alloc(100_000, 'a')]),
        );
        expect([r.statusCode, r.json().error], url).toEqual([400, 'validation_error']);
        expect(r.body).not.toContain('26,214,400');
      }
    },
  );

  // Found by a review (2026-12-03): a body declared over 25 MiB waited for room in the memory budget before
  // fastify's length check, so while large bodies held the budget it was 503 platform_failure after the wait
  // (spec: 413 for a body over 25 MiB).
  it('a body declared over 25 MiB is 413 at once, even while large bodies hold the memory budget', async () => {
    // A 25 MiB body of the same organization that never finishes arriving holds the budget.
    const stalled = new Readable({ read() {} });
    stalled.push('{"country":"co","phones":[');
    const holding = scrubPost(
      '/v2/scrub',
      { 'content-type': 'application/json', 'content-length': String(25 * 2 ** 20) },
      stalled,
    ).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    const over = await scrubPost(
      '/v2/scrub',
      { 'content-type': 'application/json', 'content-length': String(25 * 2 ** 20 + 1) },
      Readable.from([Buffer.alloc(1024, ' ')]),
    );
    expect([over.statusCode, over.json().error]).toEqual([413, 'payload_too_large']);
    expect(Date.now() - started).toBeLessThan(1_000);
    stalled.push(null); // ends short of its declared length: refused, and its place in the budget freed
    await holding;
  });

  it('a route that takes no body drops up to 64 KiB of one; more is 413 that says so', async () => {
    const send = (size: number) =>
      app.inject({
        method: 'POST',
        url: `/v2/scrub/${id}/cancel`,
        headers: { authorization: 'Bearer k', 'content-type': 'text/plain' },
        payload: Buffer.alloc(size, 'a'),
      });
    expect((await send(64 * 1024)).statusCode).not.toBe(413);
    const over = await send(64 * 1024 + 1);
    expect([over.statusCode, over.json().error]).toEqual([413, 'payload_too_large']);
    expect(over.json().message).toMatch(/takes no body/);
  });

  // RFC 9110 8.4: a body declared with a content coding is that coding's bytes; the service decodes none,
  // so it cannot read one (was: the header ignored, a plain body answered as if it were not declared gzip).
  describe('a scrub body with a content coding is 400: the service reads only uncompressed JSON', () => {
    const json = JSON.stringify({ country: 'co', phones: ['3001234567'] });
    const cases = [
      { coding: 'gzip', payload: gzipSync(json) },
      { coding: 'gzip', payload: json },
      { coding: 'br', payload: json },
      { coding: 'identity, gzip', payload: json },
    ];
    it.each(cases)('Content-Encoding: $coding', async ({ coding, payload }) => {
      for (const url of ['/v1/scrub', '/v2/scrub']) {
        const r = await scrubPost(
          url,
          { 'content-type': 'application/json', 'content-encoding': coding },
          payload,
        );
        expect(r.statusCode, url).toBe(400);
        expect(r.json(), url).toEqual({
          error: 'validation_error',
          message: 'Content-Encoding is not supported: send the JSON body uncompressed.',
        });
      }
    });
    it('Content-Encoding: identity is no coding at all: the body is read', async () => {
      const r = await scrubPost(
        '/v1/scrub',
        { 'content-type': 'application/json', 'content-encoding': 'Identity' },
        json,
      );
      expect(r.statusCode).toBe(200);
      expect(r.json().summary.total_checked).toBe(1);
    });
  });
});
