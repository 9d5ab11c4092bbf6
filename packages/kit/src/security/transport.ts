import http2 from 'node:http2';
import { isIP } from 'node:net';
import tls from 'node:tls';
import {
  Code,
  ConnectError,
  type ContextValues,
  createContextKey,
  createContextValues,
  type Interceptor,
} from '@connectrpc/connect';
import type { Logger } from 'pino';
import { HTTP2_SESSION_MEMORY_MB, HTTP2_STREAM_WINDOW, widenSessionWindow } from '../clients.js';
import { asUnavailable } from '../refused-stream.js';
import { type Identity, identityFromAltNames, isIdentity } from './identity.js';
import type { Security } from './security.js';

/** The header that carries the caller's identity in plaintext mode (development only). */
export const INSECURE_IDENTITY_HEADER = 'dnc-insecure-identity';

/** The authenticated caller of an RPC, set by the server for every request. */
export const CALLER = createContextKey<Identity | undefined>(undefined, { description: 'caller identity' });

/** The common name of the caller's certificate (which person, for an operator's own certificate). */
export const CALLER_SUBJECT = createContextKey<string>('', { description: 'caller certificate subject' });

/** `https://` with mTLS, `http://` in plaintext mode, whatever scheme an address was written with. */
export function addressFor(security: Security, address: string): string {
  const hostPort = address.replace(/^[a-z]+:\/\//, '');
  return `${security.mode === 'mtls' ? 'https' : 'http'}://${hostPort}`;
}

/**
 * Node options for a client transport to `peer`. Every new connection takes the process's current
 * certificate (so a rotated key is used from the next connection on), trusts only the platform CA,
 * and accepts the server only if its certificate names exactly the identity the caller meant to
 * reach: a registry-adapter-mx certificate does not answer for co, and a server with no platform
 * certificate never receives a request, whatever address discovery pointed to.
 */
export function clientTls(security: Security, peer: Identity): http2.SecureClientSessionOptions | undefined {
  if (security.mode !== 'mtls') return undefined;
  const { material, trustDomain } = security;
  return {
    createConnection(authority: URL) {
      const host = authority.hostname.replace(/^\[|\]$/g, '');
      const socket = tls.connect({
        host,
        port: Number(authority.port || 443),
        ...(isIP(host) ? {} : { servername: host }),
        secureContext: material.secureContext,
        ALPNProtocols: ['h2'],
        rejectUnauthorized: true,
        checkServerIdentity(_host, cert) {
          const found = identityFromAltNames(cert.subjectaltname, trustDomain);
          if (found === peer) return undefined;
          return Object.assign(
            new Error(`server identity ${found ?? '(none)'} is not the expected ${peer}`),
            {
              code: PEER_IDENTITY_MISMATCH,
            },
          );
        },
      });
      return boundHandshake(socket, TLS_HANDSHAKE_TIMEOUT_MS);
    },
  };
}

/**
 * How long a new connection may take from its TCP connect to the end of its TLS handshake. Neither
 * Node's TLS client nor http2.connect bounds it, nor Connect's session manager (connect-es #1748
 * proposes `connectTimeoutMs`): a handshake whose first record never completes (chaos S10's garbage:
 * random bytes that the client's TLS layer took for the header of a long first record, then nothing
 * more from the server, which waits for the client's Finished) held the manager in "connecting", and every call of that
 * client waited for it until its own deadline, for up to Node's server-side 120 s. A handshake on a
 * loaded machine takes milliseconds; through S10's slow proxy (400 ms a chunk) 0.8 s.
 */
export const TLS_HANDSHAKE_TIMEOUT_MS = 2_000;

/** Destroys `socket` with UNAVAILABLE (retryable) when its handshake is not done within `ms`. */
function boundHandshake(socket: tls.TLSSocket, ms: number): tls.TLSSocket {
  let finished = false;
  const timer = setTimeout(() => {
    // Timers run before I/O in Node's loop: after a pause of this process's own loop (a large body
    // parsed) the server's last handshake bytes may be in the socket, unread. Let one round of I/O
    // read them before calling the handshake stuck (as SessionProbe does for its PING).
    setImmediate(() => {
      if (finished || socket.destroyed) return;
      socket.destroy(new ConnectError(`TLS handshake not done within ${ms} ms`, Code.Unavailable));
    });
  }, ms);
  timer.unref();
  const done = () => {
    finished = true;
    clearTimeout(timer);
  };
  socket.once('secureConnect', done);
  socket.once('close', done);
  return socket;
}

const PEER_IDENTITY_MISMATCH = 'DNC_PEER_IDENTITY_MISMATCH';
const TLS_FAILURE = /^(ERR_TLS_|ERR_SSL_|UNABLE_TO_|CERT_|DEPTH_ZERO|SELF_SIGNED|DNC_PEER_IDENTITY)/;

/**
 * A peer that fails the handshake (wrong identity, certificate not of the platform CA, expired) is
 * a peer that is not there: UNAVAILABLE, as for a refused connection, so callers treat it the way
 * they treat an unreachable adapter (another instance, or 503) and never as an internal error.
 */
export const tlsFailureUnavailable: Interceptor = (next) => async (req) => {
  try {
    return await next(req);
  } catch (error) {
    const ce = ConnectError.from(error);
    const code = (ce.cause as { code?: unknown } | undefined)?.code;
    if (ce.code === Code.Internal && typeof code === 'string' && TLS_FAILURE.test(code))
      throw asUnavailable(ce);
    throw ce;
  }
};

/** In plaintext mode the client names itself in a header (nothing checks it: development only). */
export function clientIdentityInterceptors(security: Security): Interceptor[] {
  if (security.mode === 'mtls') return [];
  const identity = security.identity;
  return [
    (next) => (req) => {
      req.header.set(INSECURE_IDENTITY_HEADER, identity);
      return next(req);
    },
  ];
}

/** A connection whose client certificate ends within this is closed (gracefully) by its next call. */
const CLOSE_BEFORE_EXPIRY_MS = 5 * 60_000;

type NodeRequest = { stream?: { session?: http2.Http2Session }; headers: http2.IncomingHttpHeaders };

/**
 * The caller's identity of each request, for the server's `contextValues`. With mTLS it is read
 * once per connection from the client certificate the handshake verified, and cached with the
 * session, so a call costs a map lookup. The certificate's end counts on a connection kept open: a
 * call in its last CLOSE_BEFORE_EXPIRY_MS is served and closes the connection gracefully (GOAWAY: calls
 * in flight finish, the client's next ones open a new connection with the certificate it has now, renewed
 * long before), and a call after the end has no identity (refused by the authorization table). Clients
 * close connections idle for 60 s (kit HTTP2_OPTIONS), so their connections are gone before the end.
 */
export function callerContext(security: Security): (req: unknown) => ContextValues {
  if (security.mode === 'plaintext') {
    return (req) => {
      const raw = (req as NodeRequest).headers[INSECURE_IDENTITY_HEADER];
      const value = typeof raw === 'string' && isIdentity(raw) ? raw : undefined;
      return createContextValues().set(CALLER, value);
    };
  }
  const bySession = new WeakMap<
    http2.Http2Session,
    { identity: Identity | undefined; subject: string; validTo: number }
  >();
  const { trustDomain } = security;
  return (req) => {
    const session = (req as NodeRequest).stream?.session;
    let peer = session && bySession.get(session);
    if (session && !peer) {
      const socket = session.socket as tls.TLSSocket;
      const cert = socket.authorized ? socket.getPeerCertificate?.() : undefined;
      const cn = cert?.subject?.CN;
      peer = {
        identity: identityFromAltNames(cert?.subjectaltname, trustDomain),
        subject: (Array.isArray(cn) ? cn.join(',') : (cn ?? '')).slice(0, 128),
        validTo: cert?.valid_to ? Date.parse(cert.valid_to) : 0,
      };
      bySession.set(session, peer);
    }
    if (session && peer?.identity) {
      const left = peer.validTo - Date.now();
      if (!(left > 0)) {
        // Expired since the handshake: no identity.
        peer = { ...peer, identity: undefined };
        bySession.set(session, peer);
      }
      if (!(left > CLOSE_BEFORE_EXPIRY_MS) && !session.closed) session.close();
    }
    return createContextValues()
      .set(CALLER, peer?.identity)
      .set(CALLER_SUBJECT, peer?.subject ?? '');
  };
}

/**
 * An HTTP/2 server for Connect: with mTLS, TLS 1.2+ with ALPN h2 only, a client certificate of
 * the platform CA required at the handshake (no certificate, an expired one or one of another CA
 * never gets to send a request), the server certificate swapped in place when it rotates on disk.
 */
export function createRpcServer(
  security: Security,
  handler: (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void,
  logger?: Logger,
): http2.Http2Server | http2.Http2SecureServer {
  const settings = { initialWindowSize: HTTP2_STREAM_WINDOW };
  if (security.mode === 'plaintext') {
    const server = http2.createServer({ maxSessionMemory: HTTP2_SESSION_MEMORY_MB, settings }, handler);
    server.on('session', widenSessionWindow);
    return server;
  }
  const { material } = security;
  const server = http2.createSecureServer(
    {
      ...material.contextOptions,
      requestCert: true,
      rejectUnauthorized: true,
      minVersion: 'TLSv1.2',
      ALPNProtocols: ['h2'],
      allowHTTP1: false,
      maxSessionMemory: HTTP2_SESSION_MEMORY_MB,
      settings,
    },
    handler,
  );
  server.on('session', widenSessionWindow);
  material.onChange(() => server.setSecureContext({ ...material.contextOptions, minVersion: 'TLSv1.2' }));
  server.on('tlsClientError', (error: NodeJS.ErrnoException) => {
    // A refused handshake (no certificate, another CA, expired): counted by the log, never a crash.
    logger?.debug({ err: error, code: error.code }, 'tls handshake refused');
  });
  return server;
}
