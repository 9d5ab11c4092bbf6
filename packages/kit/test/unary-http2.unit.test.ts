import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { Code, ConnectError, createClient, type Transport } from '@connectrpc/connect';
import { createTransport } from '@connectrpc/connect/protocol-connect';
import { createConnectTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { healthv1, jobsv1 } from '@dnc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpcTransport } from '../src/index.js';
import { connectHttp2Adapter, unaryHttp2Client } from '../src/unary-http2.js';

// Unary calls read whole from the stream's events (unary-http2.ts), on both sides: the same answers,
// errors, limits, deadlines and cancellation as Connect's Node client and adapter give.

const LIMIT = 1_000;

async function listen(server: http2.Http2Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('unary calls over the lean HTTP/2 client and adapter', () => {
  let server: http2.Http2Server;
  let url: string;
  const aborted: string[] = [];

  beforeAll(async () => {
    const handler = connectHttp2Adapter({
      readMaxBytes: LIMIT,
      routes: (router) =>
        router.service(jobsv1.JobsService, {
          submitJob: async (req, ctx) => {
            if (req.jobId === 'refuse') throw new ConnectError('refused here', Code.FailedPrecondition);
            if (req.jobId === 'wait') {
              await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
              aborted.push(req.jobId);
              throw new ConnectError('gone', Code.Canceled);
            }
            return { job: { jobId: req.jobId, country: String(req.canonicalPhones.length) } };
          },
          // A large answer (for the client's own limit).
          getJob: (req) => ({ job: { jobId: req.jobId, country: 'x'.repeat(2 * LIMIT) } }),
        }),
    });
    server = http2.createServer(handler);
    url = await listen(server);
  });
  afterAll(() => server.close());

  it('answers a call, its message read whole', async () => {
    const client = createClient(jobsv1.JobsService, rpcTransport(url));
    const { job } = await client.submitJob({ jobId: 'a', canonicalPhones: new Uint8Array(700) });
    expect(job?.jobId).toBe('a');
    expect(job?.country).toBe('700');
  });

  it("a handler's error comes back with its code and message", async () => {
    const client = createClient(jobsv1.JobsService, rpcTransport(url));
    const error = await client.submitJob({ jobId: 'refuse' }).catch((e: unknown) => ConnectError.from(e));
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.FailedPrecondition);
    expect((error as ConnectError).rawMessage).toBe('refused here');
  });

  it('a request at readMaxBytes is served; one byte more is RESOURCE_EXHAUSTED', async () => {
    const client = createClient(jobsv1.JobsService, rpcTransport(url));
    // Field 1 (job_id, 2 + 1 bytes) and field 5 (canonical_phones: tag, 2-byte length, the bytes).
    const size = (n: number) => 3 + 1 + 2 + n;
    const atLimit = LIMIT - size(0);
    expect(size(atLimit)).toBe(LIMIT);
    const ok = await client.submitJob({ jobId: 'b', canonicalPhones: new Uint8Array(atLimit) });
    expect(ok.job?.country).toBe(String(atLimit));
    const error = await client
      .submitJob({ jobId: 'b', canonicalPhones: new Uint8Array(atLimit + 1) })
      .catch((e: unknown) => ConnectError.from(e));
    expect((error as ConnectError).code).toBe(Code.ResourceExhausted);
  });

  it("the client's deadline ends the call and the server's handler sees its signal aborted", async () => {
    const client = createClient(jobsv1.JobsService, rpcTransport(url));
    const t0 = Date.now();
    const error = await client
      .submitJob({ jobId: 'wait' }, { timeoutMs: 200 })
      .catch((e: unknown) => ConnectError.from(e));
    expect((error as ConnectError).code).toBe(Code.DeadlineExceeded);
    expect(Date.now() - t0).toBeLessThan(2_000);
    await expect.poll(() => aborted.includes('wait')).toBe(true);
  });

  it('a cancelled call fails CANCELED at once', async () => {
    const client = createClient(jobsv1.JobsService, rpcTransport(url));
    const controller = new AbortController();
    const call = client.submitJob({ jobId: 'wait' }, { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    const error = await call.catch((e: unknown) => ConnectError.from(e));
    expect((error as ConnectError).code).toBe(Code.Canceled);
  });

  it("an answer over the client's readMaxBytes is RESOURCE_EXHAUSTED", async () => {
    const sessions = new Http2SessionManager(url);
    const transport = createTransport({
      baseUrl: url,
      httpClient: unaryHttp2Client(sessions, LIMIT),
      useBinaryFormat: true,
      interceptors: [],
      acceptCompression: [],
      sendCompression: null,
      readMaxBytes: LIMIT,
      writeMaxBytes: LIMIT,
      compressMinBytes: 1024,
    });
    const error = await createClient(jobsv1.JobsService, transport)
      .getJob({ jobId: 'c' })
      .catch((e: unknown) => ConnectError.from(e));
    expect((error as ConnectError).code).toBe(Code.ResourceExhausted);
    sessions.abort();
  });

  it('streaming calls still go through Connect (the Health watch stream)', async () => {
    const health = http2.createServer(
      connectHttp2Adapter({
        routes: (router) =>
          router.service(healthv1.Health, {
            check: () => ({ status: healthv1.HealthCheckResponse_ServingStatus.SERVING }),
            async *watch() {
              yield { status: healthv1.HealthCheckResponse_ServingStatus.SERVING };
              yield { status: healthv1.HealthCheckResponse_ServingStatus.NOT_SERVING };
            },
          }),
      }),
    );
    const healthUrl = await listen(health);
    const client = createClient(healthv1.Health, rpcTransport(healthUrl));
    const seen: number[] = [];
    for await (const answer of client.watch({})) seen.push(answer.status);
    expect(seen).toEqual([
      healthv1.HealthCheckResponse_ServingStatus.SERVING,
      healthv1.HealthCheckResponse_ServingStatus.NOT_SERVING,
    ]);
    expect((await client.check({})).status).toBe(healthv1.HealthCheckResponse_ServingStatus.SERVING);
    health.close();
  });
});

describe('the lean client against a peer that resets its streams', () => {
  const { constants } = http2;
  const resets: Array<[string, number]> = [
    ['REFUSED_STREAM', constants.NGHTTP2_REFUSED_STREAM],
    ['CANCEL', constants.NGHTTP2_CANCEL],
    ['ENHANCE_YOUR_CALM', constants.NGHTTP2_ENHANCE_YOUR_CALM],
    ['INTERNAL_ERROR', constants.NGHTTP2_INTERNAL_ERROR],
  ];
  for (const [name, rst] of resets) {
    it(`a reset ${name} fails the call with the code Connect's own Node client gives it`, async () => {
      const server = http2.createServer();
      server.on('stream', (stream) => {
        stream.on('error', () => {});
        stream.close(rst);
      });
      const url = await listen(server);
      const codeOf = (transport: Transport) =>
        createClient(healthv1.Health, transport)
          .check({})
          .then(
            () => undefined,
            (e: unknown) => ConnectError.from(e).code,
          );
      const connects = await codeOf(createConnectTransport({ baseUrl: url, httpVersion: '2' }));
      expect(connects).toBeDefined();
      expect(await codeOf(rpcTransport(url))).toBe(connects);
      server.close();
    });
  }

  it('a reset without an error code (NO_ERROR) before any answer fails the call at once', async () => {
    const server = http2.createServer();
    server.on('stream', (stream) => stream.close(constants.NGHTTP2_NO_ERROR));
    const url = await listen(server);
    const error = await createClient(healthv1.Health, rpcTransport(url))
      .check({})
      .catch((e: unknown) => ConnectError.from(e));
    expect((error as ConnectError).code).toBe(Code.Internal);
    server.close();
  });

  it('a peer that is not there fails the call UNAVAILABLE', async () => {
    const server = http2.createServer();
    const url = await listen(server);
    await new Promise((r) => server.close(r));
    const client = createClient(healthv1.Health, rpcTransport(url));
    const error = await client.check({}).catch((e: unknown) => ConnectError.from(e));
    expect((error as ConnectError).code).toBe(Code.Unavailable);
  });
});
