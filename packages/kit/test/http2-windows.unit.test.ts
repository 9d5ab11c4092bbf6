import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { createClient } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { healthv1 } from '@dnc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createRpcServer,
  HTTP2_SESSION_WINDOW,
  HTTP2_STREAM_WINDOW,
  rpcTransport,
  type Security,
} from '../src/index.js';

// A 10,000-phone Check (~146 KB) must not wait for WINDOW_UPDATEs: servers advertise a wide stream
// window and widen the connection's, and the kit's clients do the same for answers.

describe('HTTP/2 flow-control windows of the kit servers and clients', () => {
  let server: http2.Http2Server;
  let port: number;
  const sessions: http2.ServerHttp2Session[] = [];

  beforeAll(async () => {
    const handler = connectNodeAdapter({
      routes: (router) =>
        router.service(healthv1.Health, {
          check: () => ({ status: healthv1.HealthCheckResponse_ServingStatus.SERVING }),
        }),
    });
    server = createRpcServer({ mode: 'plaintext' } as Security, handler) as http2.Http2Server;
    server.on('session', (s: http2.ServerHttp2Session) => sessions.push(s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => {
    for (const s of sessions) s.destroy();
    server.close();
  });

  it('a server advertises the stream window and opens the connection window', async () => {
    const client = http2.connect(`http://127.0.0.1:${port}`);
    const settings = await new Promise<http2.Settings>((r) => client.once('remoteSettings', r));
    expect(settings.initialWindowSize).toBe(HTTP2_STREAM_WINDOW);
    // The server's WINDOW_UPDATE on the connection arrives right after its SETTINGS.
    await new Promise((r) => setTimeout(r, 50));
    expect(client.state.remoteWindowSize).toBe(HTTP2_SESSION_WINDOW);
    client.close();
  });

  it("the kit's client advertises the same and opens its connection window", async () => {
    const client = createClient(healthv1.Health, rpcTransport(`http://127.0.0.1:${port}`));
    await client.check({});
    const session = sessions.at(-1)!;
    expect(session.remoteSettings.initialWindowSize).toBe(HTTP2_STREAM_WINDOW);
    await new Promise((r) => setTimeout(r, 50));
    // Less the answer's few bytes the server sent since; the protocol's default is 65,535.
    expect(session.state.remoteWindowSize).toBeGreaterThan(HTTP2_SESSION_WINDOW - 1024);
  });
});
