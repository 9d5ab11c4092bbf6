import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * RFC 9112 §9.6, a lingering close: when an answer closes the connection before the request has
 * arrived whole, half-close and read on instead of closing outright. A client still sending would
 * otherwise meet a closed socket, and the reset that follows discards the answer before it reads it
 * (`EPIPE` or `ECONNRESET` where the spec promises a 413 or a 431). What still arrives is read and
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
 * Fastify's `clientErrorHandler`: what a client gets when Node's HTTP layer gives up on its request
 * before any route sees it. A request (body included) not received within DNC_REQUEST_TIMEOUT_MS is
 * a 400 `validation_error` (a documented answer of the routes that take a body) instead of Node's
 * 408; a header block over Node's 16 KiB is 431 with the service's error body; anything else that
 * is not HTTP is 400. The connection closes lingering after the answer: the client may still be
 * sending the rest of its request. Node reports its failed parser again for every chunk that arrives
 * after: the socket is answered once.
 */
export function clientErrorHandler(lingering: LingeringClose) {
  const answered = new WeakSet<Duplex>();
  return (error: NodeJS.ErrnoException, socket: Duplex): void => {
    if (answered.has(socket)) return;
    if (error.code === 'ECONNRESET' || error.code === 'EPIPE' || !socket.writable) {
      socket.destroy();
      return;
    }
    const [status, text, message] =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large', 'The request headers exceed 16 KiB.']
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [400, 'Bad Request', 'The request did not arrive within the time allowed.']
          : [400, 'Bad Request', 'The request is not valid HTTP.'];
    const body = JSON.stringify({ error: 'validation_error', message });
    answered.add(socket);
    socket.write(
      `HTTP/1.1 ${status} ${text}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    // A request that timed out has had its time: closed at once, as before.
    if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') socket.destroy();
    else lingering.now(socket);
  };
}
