import { connect } from 'node:net';
import { createLogger, HealthState, Registry } from '@dnc/kit';
import { jobsv1 } from '@dnc/proto';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { gatewayConfig } from '../src/config.js';
import { inMemoryUpstream, job } from './support/upstream.js';

// Found by a spec review (2026-12-03): "All v1 responses (including errors, health and ready) carry
// `x-retention: zero` and `Cache-Control: no-store, max-age=0`", and every error body is `{error: <stable
// code>}`. A request already on a keep-alive connection when the gateway began to close was answered by
// fastify itself (`return503OnClosing`): a 503 `{"error":"Service Unavailable",...}` with none of those
// headers and no X-Request-Id. It now goes through every hook like any other request and is answered; its
// connection closes after the answer.
describe('a request that arrives while the gateway closes', () => {
  it('is answered as any other, with the v1 headers and X-Request-Id, and its connection then closes', async () => {
    const id = '0b0b0b0b-0000-4000-8000-00000000000f';
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const logger = createLogger('gateway-test', 'silent');
    const app = await buildApp({
      config: gatewayConfig.parse({ DNC_FINGERPRINT_SECRET: 'test-secret-0123456789' }),
      upstream: inMemoryUpstream({
        getJob: () => held.then(() => job(id, jobsv1.JobStatus.RUNNING)),
      }).upstream,
      health: new HealthState(logger),
      logger,
      metrics: new Registry(),
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
    });
    const ended = new Promise<void>((r) => socket.on('close', () => r()));
    await new Promise<void>((r) => socket.on('connect', () => r()));
    // The first request holds the close open; the second comes on the same connection once the close began.
    socket.write(`GET /v2/scrub/${id} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n\r\n`);
    await new Promise((r) => setTimeout(r, 100));
    const closed = app.close();
    await new Promise((r) => setTimeout(r, 50));
    socket.write('GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Request-Id: closing-1\r\n\r\n');
    await new Promise((r) => setTimeout(r, 50));
    release();
    await ended;
    await closed;
    const answers = received.split(/(?=HTTP\/1\.1 )/);
    expect(answers).toHaveLength(2);
    const [head, body] = answers[1]!.split('\r\n\r\n');
    const headers = head!.toLowerCase();
    expect(head).toMatch(/^HTTP\/1\.1 200 /);
    expect(body).toContain('"ok":true');
    expect(headers).toContain('x-retention: zero');
    expect(headers).toContain('cache-control: no-store, max-age=0');
    expect(headers).toContain('x-request-id: closing-1');
    expect(headers).toContain('connection: close');
  });
});
