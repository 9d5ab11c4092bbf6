import { once } from 'node:events';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardPing } from '../src/index.js';

// connect-es #1795 (fixed in Connect 2.3.0, which declares Node >= 22; we run 20): Connect's keep-alive
// timer pings a session that was destroyed before its close handlers stopped the timer, and Node's `ping` throws
// ERR_HTTP2_INVALID_SESSION synchronously from that timer: an uncaught exception that ends the process.
// CI saw it end the fuzz runner after its 11 scenarios had passed (2026-11-27); every service's clients
// run the same keep-alive.

describe('a PING on a destroyed HTTP/2 session', () => {
  let server: http2.Http2Server;
  let url: string;
  beforeAll(async () => {
    server = http2.createServer();
    server.on('session', (s) => s.on('error', () => {}));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  async function destroyedSession(): Promise<http2.ClientHttp2Session> {
    const session = http2.connect(url);
    session.on('error', () => {});
    await once(session, 'connect');
    session.destroy();
    return session;
  }

  it("throws synchronously in Node itself (what ends a process from Connect's timer)", async () => {
    const session = await destroyedSession();
    expect(() => session.ping(() => {})).toThrow(
      expect.objectContaining({ code: 'ERR_HTTP2_INVALID_SESSION' }),
    );
  });

  it('is refused through its callback once guarded, and reports nothing sent', async () => {
    const session = await destroyedSession();
    guardPing(session);
    let answered: Error | null | undefined;
    const answer = new Promise<void>((resolve) => {
      const sent = session.ping((error) => {
        answered = error;
        resolve();
      });
      expect(sent).toBe(false);
    });
    await answer;
    expect(answered).toMatchObject({ code: 'ERR_HTTP2_INVALID_SESSION' });
  });

  it('is left as it is on a live session: the PING is sent and answered', async () => {
    const session = http2.connect(url);
    session.on('error', () => {});
    await once(session, 'connect');
    guardPing(session);
    const duration = await new Promise<number>((resolve, reject) => {
      expect(session.ping((error, ms) => (error ? reject(error) : resolve(ms)))).toBe(true);
    });
    expect(duration).toBeGreaterThanOrEqual(0);
    session.close();
  });
});
