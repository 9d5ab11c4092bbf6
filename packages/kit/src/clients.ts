import type { DescService } from '@bufbuild/protobuf';
import { type Client, createClient, type Interceptor, type Transport } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';

/** A gRPC (HTTP/2) transport to an internal service at `http://host:port`. */
export function grpcTransport(baseUrl: string, interceptors: Interceptor[] = []): Transport {
  return createGrpcTransport({
    baseUrl,
    interceptors,
    readMaxBytes: 64 * 1024 * 1024,
    writeMaxBytes: 64 * 1024 * 1024,
    // Idle connections are pinged so a dead peer is noticed before the next call.
    pingIntervalMs: 10_000,
    pingTimeoutMs: 5_000,
    pingIdleConnection: true,
    idleConnectionTimeoutMs: 60_000,
  });
}

/** Every call without its own deadline gets this one: no internal call waits forever. */
export function defaultDeadline(timeoutMs: number): Interceptor {
  return (next) => (req) => {
    if (!req.header.has('grpc-timeout') && !req.signal.aborted) {
      const signal = AbortSignal.any([req.signal, AbortSignal.timeout(timeoutMs)]);
      return next({ ...req, signal });
    }
    return next(req);
  };
}

export function serviceClient<S extends DescService>(
  service: S,
  baseUrl: string,
  timeoutMs = 10_000,
): Client<S> {
  return createClient(service, grpcTransport(baseUrl, [defaultDeadline(timeoutMs)]));
}
