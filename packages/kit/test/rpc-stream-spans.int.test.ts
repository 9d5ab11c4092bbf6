import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { connectNodeAdapter, createConnectTransport } from '@connectrpc/connect-node';
import { jobsv1 } from '@dnc/proto';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { traceClientCalls, traceServerCalls, useTracerProvider } from '../src/tracing.js';

// A server-streaming call (GetJobResult: up to 25 MiB of result segments) is served as its messages
// are read, after the interceptor's `next` returned. Its SERVER span (and the gateway's CLIENT span)
// ended at that point: a download of seconds was traced as the first message's wait, a stream that
// failed midway was traced ok, and the handler's work between two segments ran outside the span.
// Here the handler streams two segments with a pause between them (or fails after the first), and
// the spans are read back from an in-memory exporter.

const PAUSE_MS = 300;
const exporter = new InMemorySpanExporter();
let server: http2.Http2Server;
const sessions = new Set<http2.ServerHttp2Session>();
let client: ReturnType<typeof createClient<typeof jobsv1.JobsService>>;
/** The span active in the handler while it produced its second segment. */
let activeAtSecond: string | undefined;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const METHOD = `${jobsv1.JobsService.typeName}/GetJobResult`;

beforeAll(async () => {
  useTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  const handler = connectNodeAdapter({
    interceptors: [traceServerCalls],
    routes: (router) =>
      router.service(jobsv1.JobsService, {
        async *getJobResult(req) {
          yield { chunk: new Uint8Array([0]) };
          await sleep(PAUSE_MS);
          activeAtSecond = trace.getActiveSpan()?.spanContext().spanId;
          if (req.jobId === 'fails') throw new ConnectError('segment unreadable', Code.Unavailable);
          if (req.jobId === 'long') await sleep(60_000);
          yield { chunk: new Uint8Array([1]) };
        },
      }),
  });
  server = http2.createServer(handler);
  server.on('session', (s) => sessions.add(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const transport = createConnectTransport({
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    httpVersion: '2',
    interceptors: [traceClientCalls],
  });
  client = createClient(jobsv1.JobsService, transport);
});

afterEach(() => {
  exporter.reset();
  activeAtSecond = undefined;
});

afterAll(async () => {
  for (const s of sessions) s.destroy();
  await new Promise((r) => server.close(r));
});

const ms = (s: ReadableSpan) => s.duration[0] * 1000 + s.duration[1] / 1e6;

/** The call's SERVER and CLIENT spans, once both have ended. */
async function spans(): Promise<{ server: ReadableSpan; client: ReadableSpan }> {
  return vi.waitFor(() => {
    const all = exporter.getFinishedSpans().filter((s) => s.name === METHOD);
    const server = all.find((s) => s.kind === SpanKind.SERVER);
    const client = all.find((s) => s.kind === SpanKind.CLIENT);
    if (!server || !client) throw new Error('spans not ended yet');
    return { server, client };
  });
}

describe('a streamed answer is traced until its stream ends', () => {
  it('read to its end: both spans cover the whole stream, ok, the handler works inside its span', async () => {
    const chunks: number[] = [];
    for await (const m of client.getJobResult({ orgId: 'o', jobId: 'j' })) chunks.push(...m.chunk);
    expect(chunks).toEqual([0, 1]);
    const { server, client: caller } = await spans();
    // Ending at `next` measured a few milliseconds: the pause sits between the two segments.
    expect(ms(server)).toBeGreaterThanOrEqual(PAUSE_MS - 5);
    expect(ms(caller)).toBeGreaterThanOrEqual(PAUSE_MS - 5);
    expect(server.status.code).toBe(SpanStatusCode.UNSET);
    expect(caller.status.code).toBe(SpanStatusCode.UNSET);
    // One trace: the server span is the client's child, and active while the handler streams.
    expect(server.spanContext().traceId).toBe(caller.spanContext().traceId);
    expect(server.parentSpanContext?.spanId).toBe(caller.spanContext().spanId);
    expect(activeAtSecond).toBe(server.spanContext().spanId);
  });

  it('failed after its first segment: both spans end with an error status', async () => {
    const read = async () => {
      for await (const _ of client.getJobResult({ orgId: 'o', jobId: 'fails' })) {
        // drain
      }
    };
    await expect(read()).rejects.toMatchObject({ code: Code.Unavailable });
    const { server, client: caller } = await spans();
    expect(server.status.code).toBe(SpanStatusCode.ERROR);
    expect(caller.status.code).toBe(SpanStatusCode.ERROR);
    expect(ms(server)).toBeGreaterThanOrEqual(PAUSE_MS - 5);
  });

  it('given up by its reader: both spans end when the call is aborted, not at the stream deadline', async () => {
    const abort = new AbortController();
    const stream = client.getJobResult({ orgId: 'o', jobId: 'long' }, { signal: abort.signal });
    const it = stream[Symbol.asyncIterator]();
    expect((await it.next()).value?.chunk).toEqual(new Uint8Array([0]));
    await sleep(PAUSE_MS + 100);
    // The reader stops and aborts without reading on (the gateway when its HTTP client goes away).
    const t = performance.now();
    abort.abort();
    const { server, client: caller } = await spans();
    expect(performance.now() - t).toBeLessThan(2_000);
    expect(ms(caller)).toBeGreaterThanOrEqual(PAUSE_MS);
    expect(ms(server)).toBeGreaterThanOrEqual(PAUSE_MS);
  });
});
