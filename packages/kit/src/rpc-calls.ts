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
 * is logged (its class only) and crosses as a bare INTERNAL. A server-streaming call (GetJobResult)
 * runs its handler only as its messages are read, after `next` returned: the errors of its stream are
 * mapped the same way as they are read (it is counted and timed to `next`, as before). Before, a
 * PostgreSQL restart under a result read crossed as INTERNAL and the gateway answered 500 (chaos S8).
 */
export function trackCalls(metrics: RpcMetrics, logger: Logger, inFlight: InFlight): Interceptor {
  return (next) => async (req) => {
    const method = `${req.service.typeName}/${req.method.name}`;
    const end = metrics.duration.startTimer({ method });
    inFlight.begin();
    try {
      const res = await next(req);
      metrics.total.inc({ method, code: 'ok' });
      // One line per call at debug level (with the caller's request id): follow one request hop by hop.
      logger.debug({ method }, 'rpc served');
      if (res.stream) return { ...res, message: mapStreamErrors(res.message, method, logger) };
      return res;
    } catch (error) {
      const ce = ConnectError.from(error);
      metrics.total.inc({ method, code: Code[ce.code] ?? String(ce.code) });
      throw boundaryError(error, method, logger);
    } finally {
      end();
      inFlight.end();
    }
  };
}

async function* mapStreamErrors<T>(messages: AsyncIterable<T>, method: string, logger: Logger) {
  try {
    yield* messages;
  } catch (error) {
    throw boundaryError(error, method, logger);
  }
}

/** The error a failed call crosses the boundary with (see `trackCalls`). */
function boundaryError(error: unknown, method: string, logger: Logger): ConnectError {
  const ce = ConnectError.from(error);
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
