import http2 from 'node:http2';
import { Code, ConnectError } from '@connectrpc/connect';

/**
 * A session with calls open that has read no answer byte for this long gets a PING. Connect's own
 * keep-alive pings an open session only `pingIntervalMs` (10 s) after its last answer and waits
 * `pingTimeoutMs` (5 s): a session that reads nothing any more (a TLS layer waiting for a record that
 * never completes: chaos S10's garbage) held every call sent on it for up to 15 s, the whole v1 budget.
 */
export const PROBE_AFTER_MS = 1_000;
/**
 * How long the PING may take before the session is destroyed and its calls fail with UNAVAILABLE.
 * A healthy peer answers while its handlers compute; only a blocked event loop delays the answer: a
 * 50,000-number Check keeps the adapter's loop ~50 ms (bench: ~1 us of adapter CPU per number), so
 * this leaves 30x that, and 10x the largest unit the scheduler allows (100,000).
 */
export const PROBE_TIMEOUT_MS = 1_500;

interface Watch {
  open: number;
  /** When the session last showed it reads: an answer byte, a PING answered, its first call opened. */
  aliveAt: number;
  timer?: NodeJS.Timeout;
  probing: boolean;
}

/**
 * Watches the HTTP/2 sessions of one session manager: while a session has calls open and has read
 * nothing for `PROBE_AFTER_MS`, it is sent a PING; unanswered within `PROBE_TIMEOUT_MS`, the session
 * is destroyed with UNAVAILABLE (retryable: the gateway's second Check, the worker's retry), so are
 * its calls, and the manager opens a new session for the next call. Slowness alone never ends a
 * session: a call that computes for seconds keeps it as long as the peer answers PINGs. One timer per
 * session, re-armed only when it fires (an answer byte costs one `Date.now()`).
 */
export class SessionProbe {
  private readonly watches = new WeakMap<http2.ClientHttp2Session, Watch>();

  constructor(
    private readonly afterMs = PROBE_AFTER_MS,
    private readonly timeoutMs = PROBE_TIMEOUT_MS,
  ) {}

  /** A call opened `stream`: watch its session until the call closes. */
  opened(stream: http2.ClientHttp2Stream): void {
    const session = stream.session as http2.ClientHttp2Session | undefined;
    if (!session || session.destroyed) return;
    let w = this.watches.get(session);
    if (!w) {
      w = { open: 0, aliveAt: Date.now(), probing: false };
      this.watches.set(session, w);
    }
    const watch = w;
    if (watch.open++ === 0) {
      watch.aliveAt = Date.now();
      this.arm(session, watch, this.afterMs);
    }
    stream.once('response', () => {
      watch.aliveAt = Date.now();
    });
    stream.once('close', () => {
      if (--watch.open === 0) clearTimeout(watch.timer);
    });
  }

  /** The session of `stream` read an answer byte. */
  read(stream: http2.ClientHttp2Stream): void {
    const session = stream.session as http2.ClientHttp2Session | undefined;
    const watch = session && this.watches.get(session);
    if (watch) watch.aliveAt = Date.now();
  }

  private arm(session: http2.ClientHttp2Session, watch: Watch, ms: number): void {
    clearTimeout(watch.timer);
    watch.timer = setTimeout(() => this.check(session, watch), ms).unref();
  }

  private check(session: http2.ClientHttp2Session, watch: Watch): void {
    if (watch.open === 0 || session.destroyed || watch.probing) return;
    const silentMs = Date.now() - watch.aliveAt;
    if (silentMs < this.afterMs) {
      this.arm(session, watch, this.afterMs - silentMs);
      return;
    }
    this.probe(session, watch);
  }

  private probe(session: http2.ClientHttp2Session, watch: Watch): void {
    let answered = false;
    const onAnswer = (error: Error | null) => {
      if (error) return; // destroyed meanwhile (ERR_HTTP2_PING_CANCEL) or closing: nothing to do
      answered = true;
      watch.probing = false;
      watch.aliveAt = Date.now();
      if (watch.open > 0) this.arm(session, watch, this.afterMs);
    };
    if (session.destroyed) return; // gone on its own: its calls fail with it
    let sent: boolean;
    try {
      sent = session.ping(onAnswer);
    } catch {
      return; // the session is going away on its own: its calls fail with it
    }
    if (!sent) {
      // Too many PINGs unanswered (Node's maxOutstandingPings): Connect's own keep-alive decides.
      this.arm(session, watch, this.afterMs);
      return;
    }
    watch.probing = true;
    const timeout = setTimeout(() => {
      // Timers run before I/O in Node's loop: after a pause of our own loop the answer may be in the
      // socket, unread. Let one round of I/O read it before calling the session dead.
      setImmediate(() => {
        if (answered || session.destroyed) return;
        watch.probing = false;
        session.destroy(
          new ConnectError(`HTTP/2 PING unanswered for ${this.timeoutMs} ms`, Code.Unavailable),
          http2.constants.NGHTTP2_CANCEL,
        );
      });
    }, this.timeoutMs);
    timeout.unref();
  }
}
