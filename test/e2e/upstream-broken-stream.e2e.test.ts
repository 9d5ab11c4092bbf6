import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { TcpProxy } from '@dnc/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { v2 } from '../../services/job-scheduler/test/support/e2e.js';
import { loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';

// Found by a review (2026-12-04): when the HTTP/2 stream of an internal call broke under it (RST_STREAM
// INTERNAL_ERROR, or the connection closed with GOAWAY INTERNAL_ERROR, as a server whose stream failed, or a
// proxy between two services, sends), connect-node names the call INTERNAL, and the gateway answered the
// customer 500 internal_error, which clients and the SDK do not retry. Spec, Errors: 503 `platform_failure`
// is a "platform component failure; `Retry-After` may be present", 500 an "unexpected failure". Here the
// gateway's job scheduler is a real HTTP/2 server, with the scheduler's certificate of the stack's CA, that
// breaks every stream once it has the request.

type Break = 'rst' | 'goaway';

describe('an internal call whose HTTP/2 stream broke', () => {
  let stack: TestStack;
  let org: SeededOrg;
  let api: ReturnType<typeof v2>;
  let server: http2.Http2SecureServer;
  let proxy: TcpProxy;
  let mode: Break = 'rst';
  let streams = 0;
  const sessions = new Set<http2.ServerHttp2Session>();

  beforeAll(async () => {
    proxy = await TcpProxy.start([]);
    stack = await startTestStack({
      label: 'broken_stream',
      countries: ['co'],
      processEnv: { gateway: { DNC_JOBS_ADDR: `http://${proxy.address}` } },
    });
    const dir = await stack.pki.write('broken-scheduler', 'job-scheduler');
    const pem = (name: string) => readFileSync(path.join(dir, name));
    server = http2.createSecureServer({
      key: pem('tls.key'),
      cert: pem('tls.crt'),
      ca: pem('ca.crt'),
      requestCert: true,
    });
    server.on('session', (session) => {
      sessions.add(session);
      session.on('error', () => {});
      session.on('close', () => sessions.delete(session));
    });
    server.on('stream', (stream) => {
      stream.on('error', () => {});
      streams++;
      stream.resume();
      stream.on('end', () => {
        if (mode === 'rst') stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
        else stream.session?.goaway(http2.constants.NGHTTP2_INTERNAL_ERROR);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    proxy.setUpstreams([{ host: '127.0.0.1', port: (server.address() as AddressInfo).port }]);
    org = await seedOrg(stack, ['co'], { quota: 1_000 });
    api = v2(stack, () => org);
    await loadRegistry(stack, 'co', ['+573000000001']);
  });

  afterAll(async () => {
    await stack?.teardown();
    for (const s of sessions) s.destroy();
    await new Promise((r) => server?.close(r));
    await proxy?.close();
  });

  for (const kind of ['rst', 'goaway'] as const) {
    it(`${kind}: the job's submit and its status answer 503 platform_failure with Retry-After, not 500`, async () => {
      mode = kind;
      const before = streams;
      const submitted = await api.submit(['+573000000001'], { country: 'co' });
      expect([submitted.status, submitted.body.error]).toEqual([503, 'platform_failure']);
      expect(Number(submitted.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

      const polled = await api.status(randomUUID());
      expect([polled.status, polled.body.error]).toEqual([503, 'platform_failure']);
      expect(Number(polled.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // Each reached the scheduler once: a broken stream is not sent again (it may have been processed).
      expect(streams - before).toBe(2);
    });
  }
});
