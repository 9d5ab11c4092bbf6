import type { Server as HttpServer } from 'node:http';
import type http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ConnectRouter, Interceptor } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { healthv1, platformv1 } from '@dnc/proto';
import type { Logger } from 'pino';
import { HealthState, healthService, startHealthListener } from './health.js';
import { createLogger } from './logger.js';
import { createMetricsRegistry, type Registry, startMetricsServer } from './metrics.js';
import { adoptRequestId } from './request-context.js';
import { InFlight, type RpcMetrics, rpcMetrics, trackCalls } from './rpc-calls.js';
import { type AuditSink, auditDenied, auditInterceptor, auditService } from './security/audit.js';
import { AuthorizationTable, authorizeInterceptor, type Refusal } from './security/authorization.js';
import { type Identity, isIdentity } from './security/identity.js';
import { closeSecurity, createSecurity, type Security, type SecurityConfig } from './security/security.js';
import { callerContext, createRpcServer } from './security/transport.js';
import { startTracing, traceServerCalls } from './tracing.js';

export interface ServiceOptions {
  /** Service name: logs, metrics, health and ServiceInfo. */
  name: string;
  version: string;
  logLevel: string;
  shutdownTimeoutMs: number;
  metricsPort?: number;
  /** Plaintext grpc.health.v1 only (probes); undefined: none. */
  healthPort?: number;
  /** Registry adapters report their country in ServiceInfo. */
  country?: string;
  /** This process's identity and certificate (kit security). */
  security: Security;
}

/** One listener of a service: the data plane, or the admin plane (operator, audited). */
export interface ListenerOptions {
  port: number;
  host?: string;
  routes: (router: ConnectRouter) => void;
  serviceNames: string[];
  readMaxBytes?: number;
  /** The service's own interceptors, inside the kit's (authorization, metrics, in-flight count, errors). */
  interceptors?: Interceptor[];
  /** Called for each refused call (the admin listener writes it to its audit log). */
  onDenied?: (refusal: Refusal) => void;
}

type Closer = () => Promise<void> | void;

/**
 * The lifecycle of one service process: logger, metrics, health, the gRPC server, and a bounded
 * graceful shutdown (readiness off, stop accepting, drain in-flight calls, close resources, exit 0).
 */
export class Service {
  readonly logger: Logger;
  readonly metrics: Registry;
  readonly health: HealthState;
  readonly startedAt = new Date();
  readonly security: Security;
  private readonly table = new AuthorizationTable();
  private healthStarted = false;
  /** The port of the plaintext health listener, once started. */
  healthListenPort: number | undefined;
  private rpcMetrics: RpcMetrics | undefined;
  private readonly closers: { name: string; close: Closer }[] = [];
  private readonly grpcListeners: {
    server: http2.Http2Server | http2.Http2SecureServer;
    sessions: ReadonlySet<http2.ServerHttp2Session>;
  }[] = [];
  private shuttingDown: Promise<void> | undefined;
  private readonly inFlight = new InFlight();

  constructor(readonly options: ServiceOptions) {
    this.logger = createLogger(options.name, options.logLevel);
    this.metrics = createMetricsRegistry(options.name);
    // Registered first, so it closes last: the spans of the drain are exported too.
    const stopTracing = startTracing(options.name);
    if (stopTracing) this.onClose('tracing', stopTracing);
    this.health = new HealthState(this.logger);
    this.security = options.security;
  }

  get identity(): Identity {
    return this.security.identity;
  }

  /** Resources close in reverse order of registration (last opened, first closed). */
  onClose(name: string, close: Closer): void {
    this.closers.push({ name, close });
  }

  /** Count in-flight work that shutdown must wait for (RPCs are counted by the server interceptor). */
  track<T>(work: Promise<T>): Promise<T> {
    return this.inFlight.track(work);
  }

  get inFlightCount(): number {
    return this.inFlight.size;
  }

  waitIdle(): Promise<void> {
    return this.inFlight.waitIdle();
  }

  async startMetrics(): Promise<HttpServer | undefined> {
    if (this.options.metricsPort === undefined) return undefined;
    const server = await startMetricsServer(this.metrics, this.options.metricsPort);
    this.onClose('metrics server', () => new Promise<void>((r) => server.close(() => r())));
    return server;
  }

  /** Plaintext grpc.health.v1 for probes, answering nothing else (no client certificate needed). */
  async startHealthServer(serviceNames: string[]): Promise<number | undefined> {
    if (this.options.healthPort === undefined) return undefined;
    const listener = await startHealthListener(this.health, serviceNames, this.options.healthPort);
    // A probe's idle connection must not hold the drain: closed at once (health answers NOT_SERVING
    // from the start of the drain anyway).
    this.onClose('health server', () => listener.close());
    this.healthListenPort = listener.port;
    return listener.port;
  }

  private metricsOfRpcs(): RpcMetrics {
    this.rpcMetrics ??= rpcMetrics(this.metrics);
    return this.rpcMetrics;
  }

  /**
   * A Connect server over HTTP/2 speaking gRPC, gRPC-Web and Connect: mutual TLS (a client certificate
   * of the platform CA required at the handshake), THE authorization table on every call (default
   * deny), grpc.health.v1 and dnc.platform.v1.ServiceInfoService beside the service's own routes.
   */
  async startGrpcServer(opts: ListenerOptions): Promise<{ port: number }> {
    const metrics = this.metricsOfRpcs();
    const authorize = authorizeInterceptor({
      table: this.table,
      logger: this.logger,
      denied: metrics.denied,
      ...(opts.onDenied ? { onDenied: opts.onDenied } : {}),
    });
    const info = create(platformv1.GetServiceInfoResponseSchema, {
      service: this.options.name,
      version: this.options.version,
      startedAt: timestampFromDate(this.startedAt),
      country: this.options.country ?? '',
    });
    const handler = connectNodeAdapter({
      contextValues: callerContext(this.security),
      // The caller's request id first, so the kit's own log lines carry it too; a refused call
      // ends before it is counted as served or reaches any handler.
      interceptors: [
        adoptRequestId,
        traceServerCalls,
        authorize,
        trackCalls(metrics, this.logger, this.inFlight),
        ...(opts.interceptors ?? []),
      ],
      readMaxBytes: opts.readMaxBytes ?? 64 * 1024 * 1024,
      routes: (router) => {
        router.service(healthv1.Health, healthService(this.health, opts.serviceNames));
        router.service(platformv1.ServiceInfoService, { getServiceInfo: () => info });
        opts.routes(router);
      },
    });
    const server = createRpcServer(this.security, handler, this.logger);
    const sessions = new Set<http2.ServerHttp2Session>();
    server.on('session', (s: http2.ServerHttp2Session) => {
      sessions.add(s);
      s.on('close', () => sessions.delete(s));
    });
    await listen(server, opts.port, opts.host ?? '0.0.0.0');
    // The probes' own listener comes with the first gRPC listener.
    if (!this.healthStarted) {
      this.healthStarted = true;
      await this.startHealthServer(opts.serviceNames);
    }
    this.grpcListeners.push({ server, sessions });
    // One closer for every gRPC listener, registered with the first: all of them stop accepting and
    // send their GOAWAY before the drain waits. One closer per listener waited (the calls in flight are
    // counted for the whole process) with the listeners started before it still accepting calls on
    // sessions that had no GOAWAY: the callers pinned to this process kept sending it new ones.
    if (this.grpcListeners.length === 1) this.onClose('grpc servers', () => this.drainGrpcListeners());
    return { port: (server.address() as AddressInfo).port };
  }

  private async drainGrpcListeners(): Promise<void> {
    const sessions = this.grpcListeners.flatMap((l) => [...l.sessions]);
    for (const { server } of this.grpcListeners) server.close();
    // GOAWAY to every client: they finish their streams and reconnect elsewhere. A session closed this
    // way ends by itself once its last stream has ended.
    for (const s of sessions) s.close();
    await this.waitIdle();
    // The handlers are done, but their answers may still be on their way out: destroying the sessions
    // now reset those streams (CANCEL), and the callers lost answers the service had given
    // (test/shutdown-drain.int.test.ts of admission). Destroyed only when one outlives the grace.
    await sessionsClosed(sessions, SESSION_CLOSE_GRACE_MS);
    for (const s of sessions) s.destroy();
  }

  /**
   * The admin listener: the service's administrative services on their own port (operator only by
   * THE table, apart from the data plane so no data-plane NetworkPolicy reaches it), every call written
   * to the service's append-only audit log before it runs and when it ends (a refused call too), and
   * dnc.platform.v1.AuditService to read that log.
   */
  startAdminServer(
    opts: ListenerOptions & { audit: AuditSink; targets?: Record<string, string> },
  ): Promise<{ port: number }> {
    const { audit, targets, routes, ...listener } = opts;
    const denied = auditDenied(audit, this.logger);
    return this.startGrpcServer({
      ...listener,
      serviceNames: [...opts.serviceNames, platformv1.AuditService.typeName],
      routes: (router) => {
        routes(router);
        router.service(platformv1.AuditService, auditService(audit));
      },
      interceptors: [auditInterceptor(audit, this.logger, targets), ...(opts.interceptors ?? [])],
      onDenied: (refusal) => denied({ ...refusal, targets: targets ?? {} }),
    });
  }

  /** Bounded graceful shutdown; resolves when every resource is closed or the bound is reached. */
  shutdown(reason = 'shutdown'): Promise<void> {
    if (this.shuttingDown) return this.shuttingDown;
    this.logger.info({ reason, inFlight: this.inFlight.size }, 'draining');
    this.health.setDraining();
    const work = (async () => {
      for (const { name, close } of [...this.closers].reverse()) {
        try {
          await close();
        } catch (error) {
          this.logger.warn({ resource: name, err: error }, 'close failed');
        }
      }
      this.health.stop();
    })();
    const bound = new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        this.logger.warn({ inFlight: this.inFlight.size }, 'shutdown bound reached');
        resolve();
      }, this.options.shutdownTimeoutMs);
      t.unref();
    });
    this.shuttingDown = Promise.race([work, bound]);
    return this.shuttingDown;
  }

  /** SIGTERM / SIGINT: drain, then exit 0. A second signal exits at once. */
  handleSignals(): void {
    let signalled = false;
    const onSignal = (signal: string) => {
      if (signalled) process.exit(1);
      signalled = true;
      void this.shutdown(signal).then(() => {
        this.logger.info('stopped');
        process.exit(0);
      });
    };
    process.on('SIGTERM', () => onSignal('SIGTERM'));
    process.on('SIGINT', () => onSignal('SIGINT'));
  }
}

/** How long the drain waits for a session's last answers to be written before destroying it. */
const SESSION_CLOSE_GRACE_MS = 2_000;

/** Resolves once every session has closed, or after `graceMs`, whichever comes first. */
function sessionsClosed(sessions: readonly http2.ServerHttp2Session[], graceMs: number): Promise<void> {
  // `closed` is already true after close(): a session is gone once destroyed.
  const open = sessions.filter((s) => !s.destroyed);
  if (open.length === 0) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, graceMs);
    timer.unref();
    void Promise.all(open.map((s) => new Promise((r) => s.once('close', r)))).then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function listen(server: http2.Http2Server | http2.Http2SecureServer, port: number, host: string) {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
}

/** The part of every service's configuration the Service reads (kit `commonConfig`). */
export interface ServiceConfig extends SecurityConfig {
  DNC_LOG_LEVEL: string;
  DNC_SHUTDOWN_TIMEOUT_MS: number;
  DNC_METRICS_PORT: number;
  DNC_HEALTH_PORT?: number | undefined;
}

/**
 * Start one service process the way every service starts: a Service named `name`, then `wire` opens
 * its resources and servers in order; a failure closes whatever was opened and rethrows (the caller,
 * `main` or a test, decides what a failed start means). Signals are `main`'s business, not this one's.
 */
export async function startService<T>(
  name: string,
  config: ServiceConfig,
  wire: (service: Service) => Promise<T>,
  options: { country?: string; version?: string; identity?: Identity } = {},
): Promise<T> {
  const identity = options.identity ?? name;
  if (!isIdentity(identity)) throw new Error(`${identity} is not a platform identity`);
  const logger = createLogger(name, config.DNC_LOG_LEVEL);
  // Before anything opens: no certificate (and no explicit plaintext) is a failed start.
  const security = createSecurity(config, identity, logger);
  const service = new Service({
    name,
    version: options.version ?? process.env['npm_package_version'] ?? '0.1.0',
    logLevel: config.DNC_LOG_LEVEL,
    shutdownTimeoutMs: config.DNC_SHUTDOWN_TIMEOUT_MS,
    metricsPort: config.DNC_METRICS_PORT,
    ...(config.DNC_HEALTH_PORT !== undefined ? { healthPort: config.DNC_HEALTH_PORT } : {}),
    ...(options.country ? { country: options.country } : {}),
    security,
  });
  service.onClose('certificate reload', () => closeSecurity(security));
  try {
    return await wire(service);
  } catch (error) {
    await service.shutdown('failed to start');
    throw error;
  }
}
