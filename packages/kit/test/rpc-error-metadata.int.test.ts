import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { Code, ConnectError, createClient, type HandlerContext, type Transport } from '@connectrpc/connect';
import { connectNodeAdapter, createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node';
import { jobsv1 } from '@dnc/proto';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicError, readPublicReason } from '../src/errors.js';
import { InFlight, rpcMetrics, trackCalls } from '../src/rpc-calls.js';

// Found by the chaos suite (invariants after S8): a service that passes on the public error of a call
// behind it (admission passing on quota's platform_failure) passed on that call's response headers
// too, as the error's metadata. Connect writes them into the answer's trailers, HTTP/2 refuses a
// `content-length` trailer, and the caller saw its stream reset (INTERNAL, PROTOCOL_ERROR) instead of
// the public reason. Two real HTTP/2 servers: `front` calls `back` and throws what it gets.

const servers: http2.Http2Server[] = [];
const sessions = new Set<http2.ServerHttp2Session>();

async function serve(handler: ReturnType<typeof connectNodeAdapter>): Promise<string> {
  const server = http2.createServer(handler);
  server.on('session', (s) => sessions.add(s));
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function service(
  fenceJob: (req: jobsv1.FenceJobRequest, ctx: HandlerContext) => Promise<jobsv1.FenceJobResponse>,
) {
  return connectNodeAdapter({
    interceptors: [trackCalls(rpcMetrics(new Registry()), pino({ level: 'silent' }), new InFlight())],
    routes: (router) => router.service(jobsv1.JobsService, { fenceJob }, {}),
  });
}

let frontUrl: string;

beforeAll(async () => {
  const backUrl = await serve(
    service(async (_req, ctx) => {
      ctx.responseHeader.set('x-behind', 'back');
      const error = publicError(Code.Unavailable, 'platform_failure', { retryAfterSeconds: 1 });
      error.metadata.set('dnc-check-phone-list', '1');
      throw error;
    }),
  );
  const back = createClient(
    jobsv1.JobsService,
    createConnectTransport({ baseUrl: backUrl, httpVersion: '2' }),
  );
  frontUrl = await serve(service(() => back.fenceJob({ jobId: 'j' })));
});

afterAll(async () => {
  for (const s of sessions) s.destroy();
  for (const s of servers) await new Promise((r) => s.close(r));
});

describe('an error passed on from a call behind the service', () => {
  const transports: [string, () => Transport][] = [
    ['gRPC', () => createGrpcTransport({ baseUrl: frontUrl })],
    ['Connect', () => createConnectTransport({ baseUrl: frontUrl, httpVersion: '2' })],
  ];
  for (const [protocol, transport] of transports) {
    it(`${protocol}: crosses with its code and reason, without that call's headers`, async () => {
      const error = await createClient(jobsv1.JobsService, transport())
        .fenceJob({ jobId: 'j' })
        .then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
      expect(error?.code).toBe(Code.Unavailable);
      expect(readPublicReason(error)).toMatchObject({ reason: 'platform_failure', retryAfterSeconds: 1 });
      // Our own metadata crosses; the headers of the answer from behind do not.
      expect(error?.metadata.get('dnc-check-phone-list')).toBe('1');
      expect(error?.metadata.get('x-behind')).toBeNull();
    });
  }
});
