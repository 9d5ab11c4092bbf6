import { once } from 'node:events';
import net from 'node:net';
import { createLogger, HealthState, Registry } from '@dnc/kit';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { gatewayConfig } from '../src/config.js';
import { inMemoryUpstream } from './support/upstream.js';

// Found by the fuzz smoke in CI (issue 15): a v1 body of 25 MiB + 1 byte was answered 413 on its
// declared length, and the connection closed while the client was still sending. Its next bytes met a
// closed socket, the reset discarded the unread 413, and the client saw `write EPIPE` instead of the
// spec's answer. RFC 9112 §9.6: half-close, read on, then close ("lingering close").

const LIMIT = 25 * 2 ** 20;
const MiB = Buffer.alloc(2 ** 20, 0x20);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A client busy uploading: it reads nothing until it has written `chunks` MiB of its body, pausing
 * between chunks so that the server's answer (and, on the old code, its close) lands in between.
 */
async function uploadThenRead(port: number, declared: number, chunks: number, headerPad = 0) {
  const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  socket.pause();
  const received: Buffer[] = [];
  let error: string | undefined;
  socket.on('data', (d: Buffer) => received.push(d));
  socket.on('error', (e: NodeJS.ErrnoException) => {
    error ??= e.code ?? e.message;
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await once(socket, 'connect');
  socket.write(
    `POST /v1/scrub HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer k\r\nContent-Type: application/json\r\n${
      headerPad ? `X-Pad: ${'p'.repeat(headerPad)}\r\n` : ''
    }Content-Length: ${declared}\r\n\r\n{"country":"mx","phones":["`,
  );
  for (let i = 0; i < chunks && !socket.destroyed; i++) {
    socket.write(MiB);
    await sleep(100);
  }
  socket.resume();
  return { socket, closed, text: () => Buffer.concat(received).toString('latin1'), error: () => error };
}

async function listeningApp(): Promise<FastifyInstance> {
  const logger = createLogger('gateway-test', 'silent');
  const app = await buildApp({
    config: gatewayConfig.parse({
      DNC_FINGERPRINT_SECRET: 'test-secret-0123456789',
      DNC_REQUEST_TIMEOUT_MS: '3000',
      DNC_HEADERS_TIMEOUT_MS: '2000',
    }),
    upstream: inMemoryUpstream({}).upstream,
    health: new HealthState(logger),
    logger,
    metrics: new Registry(),
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return app;
}

describe('an answer that closes the connection before the body has arrived', () => {
  let app: FastifyInstance;
  let port: number;
  beforeAll(async () => {
    app = await listeningApp();
    port = (app.server.address() as net.AddressInfo).port;
  });
  afterAll(async () => {
    await app.close();
  });

  it('reaches a client still sending its body: 25 MiB + 1 byte is read as the 413, not a reset', async () => {
    const c = await uploadThenRead(port, LIMIT + 1, 6);
    await sleep(200);
    const text = c.text();
    expect(c.error(), text.slice(0, 40)).toBeUndefined();
    expect(text.startsWith('HTTP/1.1 413 '), text.slice(0, 40)).toBe(true);
    expect(text).toMatch(/\r\nconnection: close\r\n/i);
    expect(
      text.endsWith('{"error":"payload_too_large","message":"The body exceeds 26,214,400 bytes."}'),
    ).toBe(true);
    // The client ends its side when it has read the answer; the server then closes.
    c.socket.end();
    await c.closed;
  });

  it('still bounds the time: a client that keeps sending after the 413 is cut at the request timeout', async () => {
    const t0 = Date.now();
    const c = await uploadThenRead(port, 10 * LIMIT, 2);
    const dripping = setInterval(() => {
      if (!c.socket.destroyed && c.socket.writable) c.socket.write(Buffer.alloc(1024, 0x20));
    }, 100);
    await c.closed;
    clearInterval(dripping);
    // DNC_REQUEST_TIMEOUT_MS is 3 s here (Node holds a request to the larger of it and the headers
    // timeout, 2 s here), checked every second.
    expect(Date.now() - t0).toBeLessThan(6_000);
    expect(c.text().startsWith('HTTP/1.1 413 ')).toBe(true);
  });

  it('does not hold a shutdown: the sockets still lingering are closed when the server closes', async () => {
    const other = await listeningApp();
    const c = await uploadThenRead((other.server.address() as net.AddressInfo).port, LIMIT + 1, 2);
    await sleep(200);
    expect(c.text().startsWith('HTTP/1.1 413 ')).toBe(true);
    // The client neither sends the rest nor closes: only the request timeout (3 s) would end the linger.
    const t0 = Date.now();
    await other.close();
    expect(Date.now() - t0).toBeLessThan(1_500);
    c.socket.destroy();
    await c.closed;
  });
});

// The same race before any route: Node's HTTP layer refuses a header block over 16 KiB (431, answered
// by `clientErrorHandler`) while the client is still sending the rest of its request.
describe('an answer of the HTTP layer itself (header block over 16 KiB) to a client still sending', () => {
  let app: FastifyInstance;
  let port: number;
  beforeAll(async () => {
    app = await listeningApp();
    port = (app.server.address() as net.AddressInfo).port;
  });
  afterAll(async () => {
    await app.close();
  });

  it('is read as the 431 with its body, not a reset', async () => {
    const c = await uploadThenRead(port, 8 * 2 ** 20, 6, 20 * 1024);
    await sleep(200);
    const text = c.text();
    expect(c.error(), text.slice(0, 40)).toBeUndefined();
    expect(text.startsWith('HTTP/1.1 431 '), text.slice(0, 40)).toBe(true);
    expect(text).toMatch(/\r\nconnection: close\r\n/i);
    // One answer, however much the client sends after it.
    expect(text.split('HTTP/1.1 ').length).toBe(2);
    expect(text.endsWith('{"error":"validation_error","message":"The request headers exceed 16 KiB."}')).toBe(
      true,
    );
    c.socket.end();
    await c.closed;
  });

  it('is bounded: a client that keeps sending after the 431 is cut at the request timeout', async () => {
    const t0 = Date.now();
    const c = await uploadThenRead(port, 10 * LIMIT, 2, 20 * 1024);
    const dripping = setInterval(() => {
      if (!c.socket.destroyed && c.socket.writable) c.socket.write(Buffer.alloc(1024, 0x20));
    }, 100);
    await c.closed;
    clearInterval(dripping);
    // DNC_REQUEST_TIMEOUT_MS is 3 s here: Node applies none once its parser has failed, the linger does.
    expect(Date.now() - t0).toBeLessThan(6_000);
    expect(c.text().startsWith('HTTP/1.1 431 ')).toBe(true);
  });

  it('does not hold a shutdown', async () => {
    const other = await listeningApp();
    const c = await uploadThenRead(
      (other.server.address() as net.AddressInfo).port,
      10 * LIMIT,
      2,
      20 * 1024,
    );
    await sleep(200);
    expect(c.text().startsWith('HTTP/1.1 431 ')).toBe(true);
    // The client neither sends the rest nor closes: only the linger's bound (3 s) would end it.
    const t0 = Date.now();
    await other.close();
    expect(Date.now() - t0).toBeLessThan(1_500);
    c.socket.destroy();
    await c.closed;
  });
});
