import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { create, toBinary } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { healthv1 } from '@dnc/proto';
import { afterEach, describe, expect, it } from 'vitest';
import { rpcTransport } from '../src/clients.js';
import { REFUSED_STREAM_ATTEMPTS } from '../src/refused-stream.js';

// A service that drains (rolling deploy, SIGTERM: kit `Service` closes its sessions) sends GOAWAY;
// the streams its callers opened before they read it are refused by nghttp2 with RST_STREAM
// REFUSED_STREAM, unprocessed. Connect's Node client named such a call INTERNAL, and the gateway
// answered the customer 500 internal_error. A real HTTP/2 server here plays the draining service:
// GOAWAY after the first stream of its first connection, or a refusal of every stream.

const SERVING = Buffer.from(
  toBinary(
    healthv1.HealthCheckResponseSchema,
    create(healthv1.HealthCheckResponseSchema, {
      status: healthv1.HealthCheckResponse_ServingStatus.SERVING,
    }),
  ),
);

let server: http2.Http2Server | undefined;
const sessions = new Set<http2.ServerHttp2Session>();

afterEach(async () => {
  for (const s of sessions) s.destroy();
  sessions.clear();
  await new Promise((r) => server?.close(r));
  server = undefined;
});

/** A server whose every stream goes to `onStream` (with the connection's and the stream's number). */
async function serve(
  onStream: (stream: http2.ServerHttp2Stream, connection: number, streamOfConnection: number) => void,
) {
  const seen = { connections: 0, streams: 0 };
  server = http2.createServer();
  server.on('session', (session) => {
    sessions.add(session);
    const connection = ++seen.connections;
    let streams = 0;
    session.on('stream', (stream) => {
      stream.on('error', () => {});
      seen.streams++;
      onStream(stream, connection, ++streams);
    });
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { client: createClient(healthv1.Health, rpcTransport(url)), seen };
}

function answer(stream: http2.ServerHttp2Stream): void {
  if (stream.destroyed) return;
  stream.respond({ ':status': 200, 'content-type': 'application/proto' });
  stream.end(SERVING);
}

const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );

describe('a call whose HTTP/2 stream the server refused', () => {
  it('crossed the GOAWAY of a draining server: sent again on a new connection and answered', async () => {
    const { client, seen } = await serve((stream, connection, n) => {
      if (connection === 1 && n === 1) {
        // Draining: no stream after this one is processed on this connection.
        stream.session?.goaway(http2.constants.NGHTTP2_NO_ERROR, stream.id ?? 1);
        setTimeout(() => answer(stream), 50);
      } else answer(stream);
    });
    const answers = await Promise.all(
      Array.from({ length: 4 }, () => client.check({}, { timeoutMs: 5_000 })),
    );
    expect(answers.map((a) => a.status)).toEqual(
      Array(4).fill(healthv1.HealthCheckResponse_ServingStatus.SERVING),
    );
    // The three refused ones were sent again, on a second connection.
    expect(seen.connections).toBe(2);
    expect(seen.streams).toBe(7);
  });

  it('refused at every send: fails UNAVAILABLE (an outage to retry) after a bounded number of sends', async () => {
    const { client, seen } = await serve((stream) => stream.close(http2.constants.NGHTTP2_REFUSED_STREAM));
    const error = await failure(client.check({}, { timeoutMs: 5_000 }));
    expect(error?.code).toBe(Code.Unavailable);
    expect(seen.streams).toBe(REFUSED_STREAM_ATTEMPTS);
  });

  it('within its own deadline: no send after the deadline passed', async () => {
    const { client, seen } = await serve((stream) =>
      setTimeout(() => stream.close(http2.constants.NGHTTP2_REFUSED_STREAM), 300),
    );
    const started = Date.now();
    const error = await failure(client.check({}, { timeoutMs: 450 }));
    expect(error?.code).toBe(Code.DeadlineExceeded);
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(seen.streams).toBe(2);
  });

  it('a stream reset for another reason, once the server had the request, is not sent again', async () => {
    const { client, seen } = await serve((stream) => {
      stream.resume();
      stream.on('end', () => stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR));
    });
    const error = await failure(client.check({}, { timeoutMs: 5_000 }));
    // Found by a review (2026-12-04): connect-node names it INTERNAL, and the gateway answered 500 (not to be
    // retried) for a platform component that failed. A broken stream is an outage whose outcome is unknown.
    expect(error?.code).toBe(Code.Unavailable);
    expect(seen.streams).toBe(1);
  });
});

describe('a call whose HTTP/2 stream or connection broke', () => {
  it('closed with GOAWAY INTERNAL_ERROR once the server had the request: UNAVAILABLE, not sent again', async () => {
    const { client, seen } = await serve((stream) => {
      stream.resume();
      stream.on('end', () => stream.session?.goaway(http2.constants.NGHTTP2_INTERNAL_ERROR));
    });
    const error = await failure(client.check({}, { timeoutMs: 5_000 }));
    expect(error?.code).toBe(Code.Unavailable);
    expect(seen.streams).toBe(1);
  });

  it('a server’s own INTERNAL answer stays INTERNAL', async () => {
    const { client, seen } = await serve((stream) => {
      stream.resume();
      stream.on('end', () => {
        stream.respond({ ':status': 500, 'content-type': 'application/json' });
        stream.end(JSON.stringify({ code: 'internal', message: 'internal error' }));
      });
    });
    const error = await failure(client.check({}, { timeoutMs: 5_000 }));
    expect(error?.code).toBe(Code.Internal);
    expect(error?.rawMessage).toBe('internal error');
    expect(seen.streams).toBe(1);
  });
});
