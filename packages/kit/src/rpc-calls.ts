import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import { platformv1 } from '@dnc/proto';
import type { Logger } from 'pino';
import { isDependencyOutage, publicError } from './errors.js';
import { Counter, Histogram, LATENCY_BUCKETS, type Registry } from './metrics.js';

/** Work in flight that a graceful shutdown waits for: served RPCs and whatever a service tracks. */
export class InFlight {
  private count = 0;
  private idleWaiters: (() => void)[] = [];

  get size(): number {
    return this.count;
  }

  begin(): void {
    this.count++;
  }

  end(): void {
    this.count--;
    if (this.count === 0) for (const w of this.idleWaiters.splice(0)) w();
  }

  track<T>(work: Promise<T>): Promise<T> {
    this.begin();
    return work.finally(() => this.end());
  }

  waitIdle(): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}

export interface RpcMetrics {
  total: Counter<'method' | 'code'>;
  duration: Histogram<'method'>;
  denied: Counter<'caller' | 'method'>;
}

/** The metrics of served RPCs (one set per process, shared by its listeners). */
export function rpcMetrics(registry: Registry): RpcMetrics {
  return {
    total: new Counter({
      name: 'dnc_rpc_requests_total',
      help: 'RPCs served, by method and gRPC code.',
      labelNames: ['method', 'code'],
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'dnc_rpc_duration_seconds',
      help: 'RPC handling time.',
      labelNames: ['method'],
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    denied: new Counter({
      name: 'dnc_rpc_denied_total',
      help: 'RPCs refused with PERMISSION_DENIED: the caller identity may not call the method.',
      labelNames: ['caller', 'method'],
      registers: [registry],
    }),
  };
}

/**
 * Every served call counted, timed and held in flight for the drain; its error mapped at the
 * boundary: a dependency outage becomes a retryable UNAVAILABLE platform_failure, an unexpected error
 * is logged (its class only) and crosses as a bare INTERNAL.
 *
 * The `code` label is the code of the handler's error, before that mapping (an outage counts Unknown).
 *
 * A server-streaming call (GetJobResult) runs its handler only as its messages are read, after `next`
 * returned: it is counted, timed and let out of flight once, when its stream ends — `ok` read to its
 * end, its error's code when it fails, CANCELED when the client goes away first — and the errors of
 * its stream are mapped as they are read (chaos S8: a PostgreSQL restart under a result read crossed
 * as INTERNAL, the gateway answered 500). It was counted ok at `next`, before its first message: a
 * failed download counted ok, its duration ~0, the drain not waiting for it (rpc-stream-calls.int).
 */
export function trackCalls(metrics: RpcMetrics, logger: Logger, inFlight: InFlight): Interceptor {
  return (next) => async (req) => {
    const method = `${req.service.typeName}/${req.method.name}`;
    const stopTimer = metrics.duration.startTimer({ method });
    inFlight.begin();
    const settle = (code: string) => {
      metrics.total.inc({ method, code });
      stopTimer();
      inFlight.end();
    };
    let res: Awaited<ReturnType<typeof next>>;
    try {
      res = await next(req);
    } catch (error) {
      const ce = boundaryError(error, method, logger);
      settle(codeName(ConnectError.from(error).code));
      throw ce;
    }
    // One line per call at debug level (with the caller's request id): follow one request hop by hop.
    logger.debug({ method }, 'rpc served');
    if (!res.stream) {
      settle('ok');
      return res;
    }
    return { ...res, message: settleOnEnd(res.message, method, logger, settle) };
  };
}

/**
 * The messages of a streamed answer; `settle` runs once, when the iteration ends: completed, failed
 * (mapped by `boundaryError`) or given up by its consumer (`return()`/`throw()` at a yield: the client
 * went away, its stream broke). Connect reads the stream as soon as `next` returns it, so the body
 * below (and its finally) always starts.
 */
async function* settleOnEnd<T>(
  messages: AsyncIterable<T>,
  method: string,
  logger: Logger,
  settle: (code: string) => void,
): AsyncGenerator<T> {
  let code = codeName(Code.Canceled);
  try {
    for await (const m of mapStreamErrors(messages, method, logger, (c) => (code = c))) yield m;
    code = 'ok';
  } finally {
    settle(code);
  }
}

async function* mapStreamErrors<T>(
  messages: AsyncIterable<T>,
  method: string,
  logger: Logger,
  failed: (code: string) => void,
) {
  try {
    yield* messages;
  } catch (error) {
    failed(codeName(ConnectError.from(error).code));
    throw boundaryError(error, method, logger);
  }
}

/** The only metadata an error of ours carries on purpose (e.g. `dnc-check-phone-list`). */
const OWN_METADATA = /^dnc-/;

/**
 * An error received from a call behind this one carries that call's response headers as metadata
 * (`content-type`, `content-length`, `date`). Thrown on as it is, connect writes them into this
 * answer's trailers: HTTP/2 refuses `content-length` there and the caller sees the stream reset
 * (PROTOCOL_ERROR, answered INTERNAL) instead of the error, and the rest would tell the caller about
 * the service behind. Only code, message, details and our own `dnc-` metadata cross.
 */
function ownMetadataOnly(ce: ConnectError): ConnectError {
  const foreign = [...ce.metadata.keys()].some((key) => !OWN_METADATA.test(key));
  if (!foreign) return ce;
  const own = [...ce.metadata].filter(([key]) => OWN_METADATA.test(key));
  const clean = new ConnectError(ce.rawMessage, ce.code, own, undefined, ce.cause);
  clean.details = ce.details;
  return clean;
}

/** The `code` label: the name of a gRPC code (`ok` for a call that succeeded). */
function codeName(code: Code): string {
  return Code[code] ?? String(code);
}

/** The error a failed call crosses the boundary with (see `trackCalls`). */
function boundaryError(error: unknown, method: string, logger: Logger): ConnectError {
  const ce = ownMetadataOnly(ConnectError.from(error));
  // A dependency that is down or dropped the connection is an outage the caller can retry.
  if (!(error instanceof ConnectError) && isDependencyOutage(error)) {
    logger.warn({ method, err: error }, 'rpc failed: dependency unavailable');
    return publicError(Code.Unavailable, 'platform_failure', { retryAfterSeconds: 1 });
  }
  if (ce.findDetails(platformv1.ErrorInfoSchema).length === 0 && ce.code !== Code.Canceled) {
    // Unexpected: log the class only; internal causes never cross the boundary.
    logger.error({ method, err: ce.cause instanceof Error ? ce.cause : ce }, 'rpc failed');
    if (ce.code === Code.Internal || ce.code === Code.Unknown)
      return new ConnectError('internal error', Code.Internal);
  }
  return ce;
}
