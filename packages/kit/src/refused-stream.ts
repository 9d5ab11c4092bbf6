import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';

/** Sends of one unary call whose stream the server refused, the first included. */
export const REFUSED_STREAM_ATTEMPTS = 3;

/**
 * Whether a call failed because the server refused its HTTP/2 stream (RST_STREAM REFUSED_STREAM).
 * Connect's Node client names it INTERNAL when Node's stream error comes first (the usual case: its
 * cause is ERR_HTTP2_STREAM_ERROR, "Stream closed with error code NGHTTP2_REFUSED_STREAM") and
 * UNAVAILABLE when it reads the reset code itself ("http/2 stream closed with error code
 * REFUSED_STREAM (0x7)").
 */
export function isRefusedStream(error: unknown): boolean {
  if (!(error instanceof ConnectError)) return false;
  const cause = error.cause as { code?: unknown; message?: unknown } | undefined;
  if (
    error.code === Code.Internal &&
    cause?.code === 'ERR_HTTP2_STREAM_ERROR' &&
    typeof cause.message === 'string' &&
    cause.message.endsWith('NGHTTP2_REFUSED_STREAM')
  )
    return true;
  return error.code === Code.Unavailable && error.rawMessage.includes('REFUSED_STREAM (0x7)');
}

/** A call's transport failure as the outage it is: UNAVAILABLE, its message and cause kept. */
export function asUnavailable(error: ConnectError): ConnectError {
  return new ConnectError(error.rawMessage, Code.Unavailable, undefined, undefined, error.cause);
}

/**
 * Whether a call failed because its HTTP/2 stream or connection broke, rather than because the server
 * answered it with an error: a stream reset (RST_STREAM INTERNAL_ERROR, PROTOCOL_ERROR, ...) or a
 * connection closed with an error (GOAWAY INTERNAL_ERROR), as a server whose stream failed under it, or a
 * proxy between the two, sends. Connect's Node client names these INTERNAL, the code of a server's own
 * unexpected failure, and the gateway answered them 500 internal_error, which a client is told not to retry,
 * for a platform component that failed (the contract's 503 platform_failure). A server's own INTERNAL
 * arrives as an answer, with neither an HTTP/2 error for its cause nor connect-node's reset message. A
 * malformed answer that makes the client itself reset the stream (PROTOCOL_ERROR) is named UNAVAILABLE too:
 * retried, and counted in the callers' metrics by code. Only the call's first response is covered: a stream
 * that breaks while a server-streamed answer is read (a result download) stays INTERNAL.
 */
export function isBrokenStream(error: unknown): boolean {
  if (!(error instanceof ConnectError) || error.code !== Code.Internal || isRefusedStream(error))
    return false;
  const code = (error.cause as { code?: unknown } | undefined)?.code;
  if (code === 'ERR_HTTP2_STREAM_ERROR' || code === 'ERR_HTTP2_SESSION_ERROR') return true;
  return error.rawMessage.startsWith('http/2 stream closed with error code ');
}

/**
 * A stream the server refused was not processed (RFC 9113, 8.7: the request "can be safely retried").
 * A server that is draining refuses so every stream that crossed its GOAWAY on the wire, which is
 * what a rolling deploy of any service does to the calls of its callers; Connect's Node client then
 * answered INTERNAL, which the gateway answers 500 (an unexpected failure the customer is told not to
 * retry). A unary call is sent again, on the next connection (the session manager opens one once
 * the GOAWAY is read), up to `REFUSED_STREAM_ATTEMPTS` sends in all and within the call's own
 * deadline (the signal of the first send); still refused, it fails UNAVAILABLE: an outage its caller
 * may retry. A streaming call is not sent again (its request may be consumed); it fails UNAVAILABLE.
 *
 * The innermost interceptor of a transport: each send goes straight to the HTTP/2 client, and the
 * interceptors around it (tracing, deadline) see one call. A broken stream (`isBrokenStream`) is not sent
 * again (the server may have processed it) and fails UNAVAILABLE likewise: the call's outcome is unknown,
 * as for any outage.
 */
export const retryRefusedStreams: Interceptor = (next) => async (req) => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await next(req);
    } catch (error) {
      if (isBrokenStream(error)) throw asUnavailable(error as ConnectError);
      if (!isRefusedStream(error)) throw error;
      if (req.stream || attempt >= REFUSED_STREAM_ATTEMPTS || req.signal.aborted)
        throw asUnavailable(error as ConnectError);
      // The GOAWAY came before the reset on the same connection: let the session manager see it.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
};
