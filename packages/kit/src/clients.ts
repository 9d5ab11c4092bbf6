import type http2 from 'node:http2';
import type { DescService } from '@bufbuild/protobuf';
import { type Client, createClient, type Interceptor, type Transport } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { signalWithin } from './deadline-signal.js';
import { retryRefusedStreams } from './refused-stream.js';
import { propagateRequestId } from './request-context.js';
import type { Identity } from './security/identity.js';
import type { Security } from './security/security.js';
import {
  addressFor,
  clientIdentityInterceptors,
  clientTls,
  tlsFailureUnavailable,
} from './security/transport.js';
import { SessionProbe } from './session-probe.js';
import { traceClientCalls } from './tracing.js';

/**
 * Megabytes one HTTP/2 session may buffer before nghttp2 refuses new streams with ENHANCE_YOUR_CALM
 * (Node's default is 10). A worker sends up to jobs x unit concurrency calls of up to 3.2 MB each
 * (50,000 inputs of 64 characters) to one adapter over one session: 12 of them failed every call
 * with NGHTTP2_ENHANCE_YOUR_CALM (test/e2e/worker-memory.e2e.test.ts). Set on clients and servers.
 */
export const HTTP2_SESSION_MEMORY_MB = 128;

/**
 * HTTP/2 flow control: how much a peer may send before it waits for our WINDOW_UPDATE, per stream (a
 * SETTINGS value) and per connection (raised on each session). The protocol's default, 65,535 bytes
 * for both, made a 10,000-phone Check (~146 KB) travel in three or four flights: 64 KiB, then wait
 * until the adapter's event loop has read it and said so, then the next 32 KiB, each wait a wake-up of
 * both processes (scripts/bench/README.md, issue 18). Set on clients and servers; nothing is allocated
 * up front, and each service still bounds what it reads (readMaxBytes) and the session's memory.
 */
export const HTTP2_STREAM_WINDOW = 4 * 1024 * 1024;
export const HTTP2_SESSION_WINDOW = 16 * 1024 * 1024;

/** Raise a session's connection-level window (once it is connected: before, it has no handle). */
export function widenSessionWindow(session: http2.Http2Session): void {
  const widen = () => {
    if (!session.destroyed) session.setLocalWindowSize(HTTP2_SESSION_WINDOW);
  };
  if (session.connecting) session.once('connect', widen);
  else widen();
}

/**
 * A session's `ping` that never throws: on a destroyed session it answers its callback with
 * ERR_HTTP2_INVALID_SESSION on the next tick and reports nothing sent, where Node throws. Connect's
 * keep-alive timer can fire between a session's destruction and the handlers that stop it, and its
 * `ping` call has no guard (connect-es #1795): the throw escaped the timer and ended the process
 * (test/http2-ping-guard.unit.test.ts). Connect 2.3.0 checks itself, but 2.2 and 2.3 declare Node >= 22
 * (`engines`), and the project supports Node 20.19+ (package.json `engines`, the quick start on a machine
 * with Node 20; the image and CI run 22): remove this with Node 20's support, moving to Connect 2.3.
 */
export function guardPing(session: http2.Http2Session): void {
  const ping = session.ping;
  session.ping = function guardedPing(this: http2.Http2Session, ...args: unknown[]): boolean {
    if (!this.destroyed) return (ping as (...a: unknown[]) => boolean).apply(this, args);
    const callback = args[args.length - 1];
    if (typeof callback === 'function') {
      const error = Object.assign(new Error('The session has been destroyed'), {
        code: 'ERR_HTTP2_INVALID_SESSION',
      });
      process.nextTick(callback as (e: Error) => void, error);
    }
    return false;
  } as typeof session.ping;
}

const HTTP2_OPTIONS: {
  readMaxBytes: number;
  writeMaxBytes: number;
  pingIntervalMs: number;
  pingTimeoutMs: number;
  pingIdleConnection: boolean;
  idleConnectionTimeoutMs: number;
  acceptCompression: never[];
  nodeOptions: { maxSessionMemory: number; settings: http2.Settings };
} = {
  readMaxBytes: 64 * 1024 * 1024,
  writeMaxBytes: 64 * 1024 * 1024,
  // Idle connections are pinged so a dead peer is noticed before the next call.
  pingIntervalMs: 10_000,
  pingTimeoutMs: 5_000,
  pingIdleConnection: true,
  idleConnectionTimeoutMs: 60_000,
  // No compression inside the platform: on a local network gzip costs more CPU than it saves time
  // (the default asks servers to gzip every answer above 1 KiB, a batch answer or a result chunk).
  acceptCompression: [],
  nodeOptions: {
    maxSessionMemory: HTTP2_SESSION_MEMORY_MB,
    settings: { initialWindowSize: HTTP2_STREAM_WINDOW },
  },
};

/**
 * Who calls and whom it means to reach: the caller's own security (certificate) and the identity
 * the server must prove (`registry-adapter-co` for the co adapter, whatever address it was found at).
 */
export interface PeerTls {
  security: Security;
  peer: Identity;
}

/** The scheme, TLS options and identity interceptors of a transport to `peer` (none: plain h2c). */
function secured(baseUrl: string, interceptors: Interceptor[], tls: PeerTls | undefined) {
  if (!tls) return { baseUrl, interceptors, nodeOptions: undefined };
  const nodeOptions = clientTls(tls.security, tls.peer);
  return {
    baseUrl: addressFor(tls.security, baseUrl),
    interceptors: [...clientIdentityInterceptors(tls.security), tlsFailureUnavailable, ...interceptors],
    ...(nodeOptions ? { nodeOptions } : { nodeOptions: undefined }),
  };
}

const ignore = () => {};

/**
 * Connect's HTTP/2 session manager with one listener more: every session that carried a call keeps an
 * 'error' listener for its whole life. The manager removes its own listeners from a session as soon
 * as a call finds it destroyed and it opens the next one, but Node emits a destroyed session's error
 * only later, once its socket has closed; with nobody listening, that error was an uncaught exception
 * and the process exited. A peer whose bytes are not its TLS records (a broken connection, a
 * middlebox; chaos S10's garbage) ended a gateway with ERR_SSL_DECRYPTION_FAILED_OR_BAD_RECORD_MAC.
 * The calls on such a session still fail through their own streams, and the manager still sees the
 * error while it listens (test/tls-garbage.int.test.ts).
 *
 * And a probe: a session with calls open that reads nothing for 1 s gets a PING, and is destroyed
 * when that is not answered within 1.5 s (`SessionProbe`); Connect's own keep-alive would find it
 * dead only after 10 + 5 s, holding every call on it (test/tls-stall.int.test.ts).
 */
class GuardedSessions {
  private readonly inner: Http2SessionManager;
  private readonly guarded = new WeakSet<http2.Http2Session>();
  constructor(
    baseUrl: string,
    nodeOptions: http2.SecureClientSessionOptions,
    private readonly probe: SessionProbe | undefined,
  ) {
    const { pingIntervalMs, pingTimeoutMs, pingIdleConnection, idleConnectionTimeoutMs } = HTTP2_OPTIONS;
    this.inner = new Http2SessionManager(
      baseUrl,
      { pingIntervalMs, pingTimeoutMs, pingIdleConnection, idleConnectionTimeoutMs },
      nodeOptions,
    );
  }

  get authority(): string {
    return this.inner.authority;
  }

  async request(
    method: string,
    path: string,
    headers: http2.OutgoingHttpHeaders,
    options: Omit<http2.ClientSessionRequestOptions, 'signal'>,
  ): Promise<http2.ClientHttp2Stream> {
    const stream = await this.inner.request(method, path, headers, options);
    const session = stream.session;
    if (session && !this.guarded.has(session)) {
      this.guarded.add(session);
      session.on('error', ignore);
      guardPing(session);
      widenSessionWindow(session);
    }
    this.probe?.opened(stream);
    return stream;
  }

  notifyResponseByteRead(stream: http2.ClientHttp2Stream): void {
    this.probe?.read(stream);
    this.inner.notifyResponseByteRead(stream);
  }
}

export interface TransportOptions {
  /**
   * The session probe (default on). Off for an operator's tool (dnc-admin): its registry load is one
   * upload of millions of lines that reads no answer until it ends, while the adapter indexes them; a
   * pause of the adapter's loop past the probe's 1.5 s on a busy machine failed a 10,000,000-line load
   * at 8,000,000 lines. A dead session there is found by Connect's keep-alive (10 + 5 s).
   */
  probe?: boolean;
}

function guardedSessions(
  baseUrl: string,
  nodeOptions: http2.SecureClientSessionOptions | undefined,
  options: TransportOptions,
): GuardedSessions {
  const probe = options.probe === false ? undefined : new SessionProbe();
  return new GuardedSessions(baseUrl, { ...HTTP2_OPTIONS.nodeOptions, ...nodeOptions }, probe);
}

/**
 * The transport services call each other with: the Connect protocol with binary protobuf over one
 * multiplexed HTTP/2 connection (h2c) to `http://host:port`. Every server also speaks gRPC (see
 * `grpcTransport`); the Connect protocol is the one used inside the platform because it is the
 * cheaper of the two in Node: a unary call measured ~0.32 ms of CPU (client + server) against ~0.61
 * ms for gRPC, whose trailers cost the most (scripts/bench/JOURNAL.md, "Single-number requests").
 */
export function rpcTransport(
  baseUrl: string,
  interceptors: Interceptor[] = [],
  tls?: PeerTls,
  options: TransportOptions = {},
): Transport {
  const s = secured(baseUrl, interceptors, tls);
  return createConnectTransport({
    baseUrl: s.baseUrl,
    interceptors: [propagateRequestId, traceClientCalls, ...s.interceptors, retryRefusedStreams],
    httpVersion: '2',
    useBinaryFormat: true,
    ...HTTP2_OPTIONS,
    // The session's memory bound, and with mTLS the connection that presents our certificate.
    sessionManager: guardedSessions(s.baseUrl, s.nodeOptions, options),
  });
}

/** A gRPC (HTTP/2) transport to `http://host:port`: what gRPC tooling, probes and other stacks speak. */
export function grpcTransport(
  baseUrl: string,
  interceptors: Interceptor[] = [],
  tls?: PeerTls,
  options: TransportOptions = {},
): Transport {
  const s = secured(baseUrl, interceptors, tls);
  return createGrpcTransport({
    baseUrl: s.baseUrl,
    interceptors: [propagateRequestId, traceClientCalls, ...s.interceptors, retryRefusedStreams],
    ...HTTP2_OPTIONS,
    // The session's memory bound, and with mTLS the connection that presents our certificate.
    sessionManager: guardedSessions(s.baseUrl, s.nodeOptions, options),
  });
}

/**
 * Every call without its own deadline gets this one: no internal call waits forever. The deadline travels
 * with the call (its protocol's timeout header), as one the caller set would: the service bounds its work
 * by it (quota's lock waits) and stops when its caller has. Found by a review (2026-12-04): it was a local
 * timer only, so quota's Commit and Release, bounded by their caller's deadline, saw none and waited on a
 * locked account up to the statement timeout (15 s) after their callers had stopped waiting at 5.
 */
export function defaultDeadline(timeoutMs: number): Interceptor {
  return (next) => async (req) => {
    if (!req.header.has('grpc-timeout') && !req.header.has('connect-timeout-ms') && !req.signal.aborted) {
      if (req.header.get('content-type')?.startsWith('application/grpc'))
        req.header.set('grpc-timeout', `${timeoutMs}m`);
      else req.header.set('connect-timeout-ms', String(timeoutMs));
      // Not AbortSignal.timeout inside AbortSignal.any: collected, it never fires (deadline-signal.ts).
      const within = signalWithin(timeoutMs, req.signal);
      const unary = req.method.methodKind === 'unary';
      try {
        return await next({ ...req, signal: within.signal });
      } finally {
        // A stream's answer goes on after this: its timer runs out on its own (it holds nothing else).
        if (unary) within.clear();
      }
    }
    return next(req);
  };
}

/** A client of `service` at `baseUrl`, reached as `tls.peer` with the caller's certificate. */
export function serviceClient<S extends DescService>(
  service: S,
  baseUrl: string,
  timeoutMs: number,
  tls: PeerTls,
): Client<S> {
  return createClient(service, rpcTransport(baseUrl, [defaultDeadline(timeoutMs)], tls));
}
