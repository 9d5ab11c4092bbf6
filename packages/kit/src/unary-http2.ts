import http2 from 'node:http2';
import type { JsonValue } from '@bufbuild/protobuf';
import {
  Code,
  ConnectError,
  type ConnectRouterOptions,
  type ContextValues,
  createConnectRouter,
} from '@connectrpc/connect';
import type {
  UniversalClientFn,
  UniversalClientRequest,
  UniversalClientResponse,
  UniversalHandler,
} from '@connectrpc/connect/protocol';
import {
  type ConnectNodeAdapterOptions,
  compressionBrotli,
  compressionGzip,
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from '@connectrpc/connect-node';

/*
 * Unary calls without Connect's per-chunk async iterables, on both sides of the wire.
 *
 * Connect for Node turns every HTTP/2 body into an async iterable: the server reads a request through
 * Node's stream iterator and two generator wrappers, the client reads an answer through the stream
 * iterator, a race per chunk and a sentinel that builds an error at every call's end. For a unary call
 * (one message each way, read whole before anything happens) that machinery was most of the call's
 * cost on this machine: a bare call between two processes measured ~1.7 ms and ~1.8 ms of CPU (client
 * + server); with the body read from the stream's own events, ~1.15 ms and ~1.25 ms (scripts/bench/
 * README.md, "Unary calls without the async iterables"). An 8 MB SubmitJob crosses as ~500 chunks.
 *
 * Nothing of the protocol changes: the client is Connect's own transport (`createTransport` of
 * `@connectrpc/connect/protocol-connect`) with this `httpClient`, its documented extension point; the
 * server is Connect's own router and universal handlers, given the request's body once it has arrived.
 * Headers, errors, deadlines, interceptors, context values and limits are Connect's. Streaming calls
 * keep Connect's Node client and adapter unchanged.
 */

/** The part of Connect's HTTP/2 session manager a unary call uses (GuardedSessions in clients.ts). */
export interface UnarySessions {
  readonly authority: string;
  request(
    method: string,
    path: string,
    headers: http2.OutgoingHttpHeaders,
    options: Omit<http2.ClientSessionRequestOptions, 'signal'>,
  ): Promise<http2.ClientHttp2Stream>;
  notifyResponseByteRead(stream: http2.ClientHttp2Stream): void;
}

/** A body that is one chunk, read once: what a unary call's message is, for Connect's readers. */
function oneChunk(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  return {
    [Symbol.asyncIterator]() {
      let done = false;
      return {
        next() {
          if (done) return Promise.resolve({ done: true, value: undefined });
          done = true;
          return Promise.resolve({ done: false, value: bytes });
        },
      };
    },
  };
}

async function readAll(body: AsyncIterable<Uint8Array> | undefined): Promise<Uint8Array> {
  if (!body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks);
}

function nodeHeaders(header: Headers): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = {};
  header.forEach((value, key) => {
    out[key] = value;
  });
  return out;
}

function webHeaders(headers: http2.IncomingHttpHeaders, into = new Headers()): Headers {
  for (const key in headers) {
    if (key.startsWith(':')) continue;
    const value = headers[key];
    if (Array.isArray(value)) for (const v of value) into.append(key, v);
    else if (value !== undefined) into.set(key, String(value));
  }
  return into;
}

/** Node's error as Connect's Node client names it (connect-node's node-error.ts, which is not exported). */
function fromNodeReason(reason: unknown): ConnectError {
  if (reason instanceof ConnectError) return reason;
  const codes: string[] = [];
  for (
    let e: unknown = reason;
    e instanceof Error && codes.length < 8;
    e = (e as { cause?: unknown }).cause
  ) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
  }
  const has = (...names: string[]) => codes.some((c) => names.includes(c));
  const code = has(
    'ERR_STREAM_WRITE_AFTER_END',
    'ERR_STREAM_DESTROYED',
    'ERR_HTTP2_INVALID_STREAM',
    'ECONNRESET',
  )
    ? Code.Aborted
    : has('ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNREFUSED')
      ? Code.Unavailable
      : Code.Internal;
  const error = ConnectError.from(reason, code);
  if (error !== reason) error.cause = reason;
  return error;
}

const { constants } = http2;
const RESET_CODES: Record<number, Code> = {
  [constants.NGHTTP2_PROTOCOL_ERROR]: Code.Internal,
  [constants.NGHTTP2_INTERNAL_ERROR]: Code.Internal,
  [constants.NGHTTP2_FLOW_CONTROL_ERROR]: Code.Internal,
  [constants.NGHTTP2_SETTINGS_TIMEOUT]: Code.Internal,
  [constants.NGHTTP2_FRAME_SIZE_ERROR]: Code.Internal,
  [constants.NGHTTP2_COMPRESSION_ERROR]: Code.Internal,
  [constants.NGHTTP2_CONNECT_ERROR]: Code.Internal,
  [constants.NGHTTP2_REFUSED_STREAM]: Code.Unavailable,
  [constants.NGHTTP2_CANCEL]: Code.Canceled,
  [constants.NGHTTP2_ENHANCE_YOUR_CALM]: Code.ResourceExhausted,
  [constants.NGHTTP2_INADEQUATE_SECURITY]: Code.PermissionDenied,
  [constants.NGHTTP2_HTTP_1_1_REQUIRED]: Code.PermissionDenied,
};

/** A stream reset by the peer, as Connect's Node client names it; undefined for none (NO_ERROR). */
function fromResetCode(rstCode: number): ConnectError | undefined {
  const code = RESET_CODES[rstCode];
  return code === undefined
    ? undefined
    : new ConnectError(`http/2 stream closed with error code 0x${rstCode.toString(16)}`, code);
}

function abortReason(signal: AbortSignal): ConnectError {
  return signal.reason instanceof ConnectError
    ? signal.reason
    : new ConnectError('the operation was aborted', Code.Canceled, undefined, undefined, signal.reason);
}

/** The session's stream for a call, or the call's abort (a stream that arrives after it is closed). */
function openStream(
  sessions: UnarySessions,
  req: UniversalClientRequest,
  path: string,
): Promise<http2.ClientHttp2Stream> {
  const opening = sessions.request(req.method, path, nodeHeaders(req.header), {});
  const { signal } = req;
  if (!signal) return opening;
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    opening.then(
      (stream) => {
        signal.removeEventListener('abort', onAbort);
        if (signal.aborted) stream.close(constants.NGHTTP2_CANCEL);
        else resolve(stream);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(fromNodeReason(error));
      },
    );
  });
}

/**
 * The HTTP client of a unary call over `sessions`: the request's one message written at once, the
 * answer read from the stream's events into one buffer (at most `readMaxBytes`), its body handed to
 * Connect as one chunk. The call's signal (deadline, cancellation, Connect's end of call) closes the
 * stream; a reset, a stream error or a premature close fails the call with the code Connect's own Node
 * client gives it.
 */
export function unaryHttp2Client(sessions: UnarySessions, readMaxBytes: number): UniversalClientFn {
  return async (req) => {
    const url = new URL(req.url);
    if (url.origin !== sessions.authority) {
      throw new ConnectError(`cannot make a request to ${url.origin} on this session`, Code.Internal);
    }
    const body = await readAll(req.body);
    const stream = await openStream(sessions, req, url.pathname + url.search);
    return new Promise<UniversalClientResponse>((resolve, reject) => {
      const { signal } = req;
      const chunks: Buffer[] = [];
      let size = 0;
      let status = 0;
      let header = new Headers();
      const trailer = new Headers();
      let settled = false;
      const settle = () => {
        settled = true;
        signal?.removeEventListener('abort', onAbort);
      };
      const fail = (error: ConnectError) => {
        if (settled) return;
        settle();
        reject(error);
        if (!stream.closed) {
          stream.close(
            error.code === Code.Canceled ? constants.NGHTTP2_CANCEL : constants.NGHTTP2_INTERNAL_ERROR,
          );
        }
      };
      function onAbort() {
        if (signal) fail(abortReason(signal));
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      stream.on('response', (headers) => {
        status = Number(headers[':status'] ?? 0);
        header = webHeaders(headers);
      });
      stream.on('trailers', (headers) => webHeaders(headers, trailer));
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > readMaxBytes) {
          fail(
            new ConnectError(
              `message size is larger than configured readMaxBytes ${readMaxBytes}`,
              Code.ResourceExhausted,
            ),
          );
          return;
        }
        chunks.push(chunk);
        sessions.notifyResponseByteRead(stream);
      });
      stream.on('end', () => {
        // Ended without an answer's headers: a reset with no error emitted (CANCEL); 'close' names it.
        if (settled || status === 0) return;
        settle();
        const bytes = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
        resolve({ status, header, trailer, body: oneChunk(bytes) });
      });
      stream.on('error', (error: Error) => {
        // Connect's client too ignores a write after the end (the peer answered before reading it all).
        if (stream.writableEnded && (error as { code?: string }).code === 'ERR_STREAM_WRITE_AFTER_END')
          return;
        fail(fromNodeReason(error));
      });
      stream.on('close', () => {
        fail(fromResetCode(stream.rstCode) ?? new ConnectError('http/2 stream closed early', Code.Internal));
      });
      stream.end(body);
    });
  };
}

/**
 * Connect's Node adapter (`connectNodeAdapter`: the same router, handlers, options and defaults),
 * except that a unary call's request body is read from the stream's events into one buffer before the
 * handler gets it, as one chunk. More than `readMaxBytes` stops the reading: the handler then gets what
 * arrived, over the limit, and answers Connect's own RESOURCE_EXHAUSTED.
 */
export function connectHttp2Adapter(
  options: ConnectNodeAdapterOptions & {
    /**
     * Counts a unary call from its headers to its answer, its body's arrival included (the kit's
     * in-flight count: a drain waits for a SubmitJob whose 8 MB are still arriving, as it did when
     * Connect's adapter started the handler at the headers).
     */
    inFlight?: { begin(): void; end(): void };
  },
): (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void {
  const routerOptions: ConnectRouterOptions = {
    ...options,
    acceptCompression: options.acceptCompression ?? [compressionGzip, compressionBrotli],
  };
  const router = createConnectRouter(routerOptions);
  options.routes(router);
  const prefix = options.requestPathPrefix ?? '';
  const paths = new Map<string, UniversalHandler>();
  for (const handler of router.handlers) paths.set(prefix + handler.requestPath, handler);
  const readMaxBytes = options.readMaxBytes ?? 0xffffffff;

  const serve = (
    handler: UniversalHandler,
    request: ReturnType<typeof universalRequestFromNodeRequest>,
    res: http2.Http2ServerResponse,
  ): Promise<void> =>
    handler(request)
      .then((response) => universalResponseToNodeResponse(response, res))
      // A handler's error is already an answer (Connect's); what fails here is writing it to a peer that
      // went away. Connect's adapter printed those with their stack to stderr; the kit logs no stacks.
      .catch(() => {});

  return (req, res) => {
    const handler = paths.get(req.url?.split('?', 2)[0] ?? '');
    if (!handler) {
      if (options.fallback) options.fallback(req, res);
      else {
        res.writeHead(404);
        res.end();
      }
      return;
    }
    const contextValues: ContextValues | undefined = options.contextValues?.(req);
    if (handler.method.methodKind !== 'unary' || req.method !== 'POST') {
      void serve(handler, universalRequestFromNodeRequest(req, res, undefined, contextValues), res);
      return;
    }
    const { inFlight } = options;
    let counted = inFlight !== undefined;
    const uncount = () => {
      if (counted) inFlight?.end();
      counted = false;
    };
    inFlight?.begin();
    req.once('close', uncount);
    const chunks: Buffer[] = [];
    let size = 0;
    const arrived = () => {
      req.off('data', onData);
      req.off('end', arrived);
      const bytes = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
      // Connect's request from Node's, with the body that arrived instead of the stream's iterator
      // (its third argument is the body it uses as it is: a pre-read JSON body in Connect's own use).
      const body = oneChunk(bytes) as unknown as JsonValue;
      void serve(handler, universalRequestFromNodeRequest(req, res, body, contextValues), res).finally(
        uncount,
      );
    };
    function onData(chunk: Buffer) {
      chunks.push(chunk);
      size += chunk.length;
      if (size > readMaxBytes) {
        req.pause();
        arrived();
      }
    }
    req.on('data', onData);
    req.on('end', arrived);
  };
}
