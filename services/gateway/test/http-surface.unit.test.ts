import { createLogger, HealthState, Registry } from '@dnc/kit';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { gatewayConfig } from '../src/config.js';
import { connectUpstreams } from '../src/upstream/clients.js';
import { upstreamPort } from '../src/upstream/port.js';

// A port nothing listens on: admission is "down" for these tests.
const DOWN = 'http://127.0.0.1:1';

describe('gateway HTTP surface without its upstreams (spec: Endpoints / Common, health, ready, 405)', () => {
  let app: FastifyInstance;
  const logger = createLogger('gateway-test', 'silent');
  const health = new HealthState(logger);

  beforeAll(async () => {
    const config = gatewayConfig.parse({
      DNC_FINGERPRINT_SECRET: 'test-secret-0123456789',
      DNC_ADMISSION_ADDR: DOWN,
      DNC_JOBS_ADDR: DOWN,
    });
    health.require('admission', async () => false);
    await health.start();
    app = await buildApp({
      config,
      upstream: upstreamPort(
        connectUpstreams(DOWN, DOWN, { mode: 'plaintext', identity: 'gateway', trustDomain: 'dnc.internal' }),
      ),
      health,
      logger,
      metrics: new Registry(),
    });
  });
  afterAll(async () => {
    health.stop();
    await app.close();
  });

  const v1Headers = (h: Record<string, unknown>) => {
    expect(h['x-retention']).toBe('zero');
    expect(h['cache-control']).toBe('no-store, max-age=0');
  };

  it('GET /v1/health answers {ok:true} with the v1 headers and no rate-limit headers', async () => {
    const r = await app.inject({ method: 'GET', url: '/v1/health' });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ ok: true });
    v1Headers(r.headers);
    expect(Object.keys(r.headers).filter((k) => k.includes('ratelimit'))).toEqual([]);
  });

  it('POST /v1/health is 405 with Allow: GET and the v1 headers', async () => {
    const r = await app.inject({ method: 'POST', url: '/v1/health', payload: {} });
    expect(r.statusCode).toBe(405);
    expect(r.headers['allow']).toBe('GET');
    expect(r.json()).toEqual({ error: 'method_not_allowed', message: 'Use GET.' });
    v1Headers(r.headers);
  });

  it('GET /v1/scrub is 405 with Allow: POST', async () => {
    const r = await app.inject({ method: 'GET', url: '/v1/scrub' });
    expect(r.statusCode).toBe(405);
    expect(r.headers['allow']).toBe('POST');
    v1Headers(r.headers);
  });

  it('an unknown route is a JSON 404', async () => {
    const r = await app.inject({ method: 'GET', url: '/v1/nothing-here' });
    expect(r.statusCode).toBe(404);
    expect(r.json()).toEqual({ error: 'not_found', message: 'No such endpoint.' });
    v1Headers(r.headers);
    const other = await app.inject({ method: 'GET', url: '/elsewhere' });
    expect(other.statusCode).toBe(404);
    expect(other.headers['x-retention']).toBeUndefined();
  });

  it('GET /v1/ready is 503 while admission is unreachable, with the v1 headers', async () => {
    const r = await app.inject({ method: 'GET', url: '/v1/ready' });
    expect(r.statusCode).toBe(503);
    expect(r.json()).toEqual({ ok: false, error: 'not_ready' });
    v1Headers(r.headers);
  });

  it('an authenticated route answers 503 platform_failure (no internals) when admission is down', async () => {
    const r = await app.inject({
      method: 'POST',
      url: '/v1/scrub',
      headers: { authorization: 'Bearer dnc_test_key', 'idempotency-key': 'k1' },
      payload: { country: 'co', phones: ['3001234567'] },
    });
    expect(r.statusCode).toBe(503);
    expect(r.json()).toEqual({ error: 'platform_failure' });
    expect(r.headers['retry-after']).toBe('1');
    v1Headers(r.headers);
    expect(r.body).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|stack|at .*\.js/);
  });

  it('a v2 path carries x-retention: transient-encrypted even on 404', async () => {
    const r = await app.inject({ method: 'GET', url: '/v2/unknown' });
    expect(r.statusCode).toBe(404);
    expect(r.headers['x-retention']).toBe('transient-encrypted');
  });

  // Found by a spec-conformance review (2026-12-03): the policy matched `/v1/` and `/v2/` only, so `/v1` and
  // `/v2` themselves (a client's base URL with the version) answered their 404 with neither header.
  it('/v1 and /v2 themselves (and with a query) carry their version headers; /v10 does not', async () => {
    for (const url of ['/v1', '/v1?x=1']) {
      const r = await app.inject({ method: 'GET', url });
      expect(r.statusCode, url).toBe(404);
      v1Headers(r.headers);
    }
    for (const url of ['/v2', '/v2?x=1']) {
      const r = await app.inject({ method: 'POST', url, payload: {} });
      expect(r.statusCode, url).toBe(404);
      expect(r.headers['x-retention'], url).toBe('transient-encrypted');
    }
    expect((await app.inject({ method: 'GET', url: '/v10' })).headers['x-retention']).toBeUndefined();
  });

  // Found by the same review: the body parser of other media types ran for requests with no route and
  // refused a body over 64 KiB with 413, so PUT /v1/scrub or POST /v1/health with a large non-JSON body was
  // 413 without `Allow` where the spec says 405 (unsupported method). The body is not read; the answer
  // closes the connection.
  it('an unsupported method with a large non-JSON body is 405 with Allow (404 on an unknown path), not 413', async () => {
    const big = 'x'.repeat(200 * 1024);
    for (const [method, url, allow] of [
      ['PUT', '/v1/scrub', 'POST'],
      ['POST', '/v1/health', 'GET'],
      ['DELETE', '/v2/scrub/2c0f4a52-6a3e-4bb4-8f0d-2a9e5f6a1b7c', 'GET'],
    ] as const) {
      const r = await app.inject({ method, url, payload: big, headers: { 'content-type': 'text/plain' } });
      expect([r.statusCode, r.headers['allow']], `${method} ${url}`).toEqual([405, allow]);
      expect(r.headers['connection']).toBe('close');
    }
    const unknown = await app.inject({
      method: 'POST',
      url: '/v1/nothing-here',
      payload: big,
      headers: { 'content-type': 'text/csv' },
    });
    expect(unknown.statusCode).toBe(404);
    const json = await app.inject({
      method: 'PUT',
      url: '/v2/scrub',
      payload: JSON.stringify({ phones: Array.from({ length: 20_000 }, () => '3001234567') }),
      headers: { 'content-type': 'application/json' },
    });
    expect([json.statusCode, json.headers['allow'], json.headers['connection']]).toEqual([
      405,
      'POST',
      'close',
    ]);
  });

  // Found by a black-box probe (2026-12-04): a request no route takes whose body could not be parsed (a
  // malformed Content-Type; a QUERY, a method with a body, sent without one) reached the error handler and
  // was answered 400 validation_error where the spec says 405 with `Allow` (or 404 for an unknown path).
  it('an unsupported method with a malformed Content-Type, or QUERY without one, is 405 with Allow (404 unknown)', async () => {
    for (const [method, url, allow, headers] of [
      ['PUT', '/v1/health', 'GET', { 'content-type': '///' }],
      ['POST', '/v1/health', 'GET', { 'content-type': '///' }],
      ['PATCH', '/v1/scrub', 'POST', { 'content-type': 'application/' }],
      ['QUERY', '/v1/health', 'GET', {}],
      ['QUERY', '/v1/scrub', 'POST', {}],
      ['QUERY', '/v2/scrub/2c0f4a52-6a3e-4bb4-8f0d-2a9e5f6a1b7c', 'GET', {}],
    ] as const) {
      const r = await app.inject({ method, url, payload: 'x', headers });
      expect([r.statusCode, r.headers['allow'], r.json().error], `${method} ${url}`).toEqual([
        405,
        allow,
        'method_not_allowed',
      ]);
    }
    const unknown = await app.inject({
      method: 'POST',
      url: '/nope',
      payload: 'x',
      headers: { 'content-type': '///' },
    });
    expect([unknown.statusCode, unknown.json().error]).toEqual([404, 'not_found']);
  });

  it('serves the OpenAPI document without authentication', async () => {
    const r = await app.inject({ method: 'GET', url: '/openapi.json' });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({ openapi: '3.1.0', info: { version: '2.1.0' } });
  });

  it('renders the docs page at /docs from the same document', async () => {
    const page = await app.inject({ method: 'GET', url: '/docs' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    const spec = await app.inject({ method: 'GET', url: '/docs/json' });
    expect(spec.json()).toMatchObject({ openapi: '3.1.0', info: { version: '2.1.0' } });
  });
});
