import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { acceptRequestId, type Logger, REQUEST_ID_HEADER } from '@dnc/kit';
import { policyHeaders } from './header-policy.js';

/**
 * RFC 9112 §9.6, a lingering close: when an answer closes the connection before the request has
 * arrived whole, half-close and read on instead of closing outright. A client still sending would
 * otherwise meet a closed socket, and the reset that follows discards the answer before it reads it
 * (`EPIPE` or `ECONNRESET` where the spec promises a 413 or a 400). What still arrives is read and
 * dropped by Node's parser, never kept. Two kinds of answer linger:
 * - fastify's (413 on a body's declared length, 415): Node's request timeout and idle-socket
 *   timeout bound how long, as for any request (`afterAnswer`);
 * - the HTTP layer's own, written by hand in `clientErrorHandler` (a header block over 16 KiB): Node
 *   applies no request timeout once its parser has failed, so `maxMs` bounds it (`now`).
 * Once the server is closing nothing lingers, and the sockets still lingering are closed (`close`): a
 * shutdown does not wait for the rest of a refused request.
 */
export class LingeringClose {
  private readonly sockets = new Set<Duplex>();
  private closing = false;

  constructor(private readonly maxMs: number) {}

  /**
   * Node's HTTP server calls the socket's `destroySoon` once a `Connection: close` answer is finished:
   * an internal of Node (20 and 22), not a documented hook, so `lingering-close.int.test.ts` is what
   * says it still holds on a new Node.
   */
  afterAnswer(socket: Socket): void {
    if (this.closing) return;
    socket.destroySoon = () => this.linger(socket);
  }

  /** Half-close now, after an answer written to the socket by hand; destroyed after `maxMs` at most. */
  now(socket: Duplex): void {
    if (this.closing) {
      socket.destroy();
      return;
    }
    const timer = setTimeout(() => socket.destroy(), this.maxMs);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
    this.linger(socket);
  }

  close(): void {
    this.closing = true;
    for (const socket of this.sockets) socket.destroy();
  }

  private linger(socket: Duplex): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    socket.end();
  }
}

/**
 * The request each socket is receiving, for the answers `clientErrorHandler` writes by hand: a request
 * that timed out while its body was arriving follows its path's header policy too.
 */
export class SocketRequests {
  private readonly current = new WeakMap<Duplex, IncomingMessage>();

  watch(server: Server): void {
    server.on('request', (request: IncomingMessage) => this.current.set(request.socket, request));
  }

  /** The request still arriving on `socket` (not one it finished before). */
  arriving(socket: Duplex): IncomingMessage | undefined {
    const request = this.current.get(socket);
    return request && !request.complete ? request : undefined;
  }
}

/**
 * The beginning of the request-target in the bytes Node's parser failed on, when they begin with a
 * request line (a header block that is too long or not HTTP: the route is never reached, its path is
 * only there). The header policy goes by the path's first segment, so a path longer than what is read
 * here (one over 16 KiB is itself the refusal) still names it.
 */
function requestTarget(error: Error): string | undefined {
  const raw = (error as { rawPacket?: unknown }).rawPacket;
  if (!Buffer.isBuffer(raw)) return undefined;
  const start = raw.toString('latin1', 0, Math.min(raw.length, 256));
  return /^[A-Z]{3,7} (\/[^ \r\n]*)/.exec(start)?.[1];
}

/**
 * Fastify's `clientErrorHandler`: what a client gets when Node's HTTP layer gives up on its request
 * before any route sees it. A request (body included) not received within DNC_REQUEST_TIMEOUT_MS is
 * a 400 `validation_error` (a documented answer of the routes that take a body) instead of Node's
 * 408; a header block over Node's 16 KiB, and anything else that is not HTTP, is 400 too (the spec's
 * errors of every endpoint: no 431), each with the service's error body and the header policy of the
 * request's path when it is known (spec, Endpoints/Common: every v1 answer, errors included, is
 * zero-retention and not cacheable; every v2 answer transient-encrypted), else `Cache-Control:
 * no-store`; and an X-Request-Id, as on every answer (the request's own when its hooks ran with it, a
 * request that timed out; else a new one), logged with the refusal's kind so support finds it. The
 * connection closes lingering after the answer: the client may still be sending the rest of its
 * request. Node reports its failed parser again for every chunk that arrives after: the socket is
 * answered once.
 */
export function clientErrorHandler(lingering: LingeringClose, requests: SocketRequests, logger: Logger) {
  const answered = new WeakSet<Duplex>();
  return (error: NodeJS.ErrnoException, socket: Duplex): void => {
    if (answered.has(socket)) return;
    if (error.code === 'ECONNRESET' || error.code === 'EPIPE' || !socket.writable) {
      socket.destroy();
      return;
    }
    const message =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? 'The request headers exceed 16 KiB.'
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? 'The request did not arrive within the time allowed.'
          : 'The request is not valid HTTP.';
    const body = JSON.stringify({ error: 'validation_error', message });
    const target = requestTarget(error);
    const arriving = target === undefined ? requests.arriving(socket) : undefined;
    const path = target ?? arriving?.url;
    const policy = path === undefined ? [] : policyHeaders(path);
    const requestId = acceptRequestId(arriving?.headers[REQUEST_ID_HEADER]);
    const headers = [
      ...(policy.length > 0 ? policy : [['cache-control', 'no-store']]),
      [REQUEST_ID_HEADER, requestId],
    ];
    // No path, header or byte of the request in the log: only what it was refused for.
    logger.info(
      { requestId, refusal: error.code ?? 'unknown', status: 400 },
      'request refused by the HTTP layer',
    );
    answered.add(socket);
    socket.write(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${headers.map(([name, value]) => `${name}: ${value}\r\n`).join('')}Connection: close\r\n\r\n${body}`,
    );
    // A request that timed out has had its time: closed at once, as before.
    if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') socket.destroy();
    else lingering.now(socket);
  };
}
