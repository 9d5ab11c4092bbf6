import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { Code, ConnectError, type ServiceImpl } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { healthv1 } from '@dnc/proto';
import type { Logger } from 'pino';

const { HealthCheckResponse_ServingStatus: Status } = healthv1;

export type DependencyProbe = () => Promise<boolean>;

/**
 * Honest health: NOT_SERVING while draining or while any required dependency is down. Probes run
 * in the background on an interval, so a health check never waits on a dependency. A probe past its
 * timeout counts as down, and is not started again until it settles: a dependency that hangs gets
 * one probe waiting on it, not one more per interval (each holding a pool's queue slot or socket).
 */
export class HealthState {
  private draining = false;
  private readonly probes = new Map<string, DependencyProbe>();
  private readonly results = new Map<string, boolean>();
  private readonly running = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly intervalMs = 1000,
  ) {}

  /** Register a required dependency; the service is serving only while every probe passes. */
  require(name: string, probe: DependencyProbe): void {
    this.probes.set(name, probe);
  }

  async start(): Promise<void> {
    await this.probeAll();
    this.timer = setInterval(() => void this.probeAll(), this.intervalMs);
    this.timer.unref();
  }

  setDraining(): void {
    this.draining = true;
  }

  get isDraining(): boolean {
    return this.draining;
  }

  get serving(): boolean {
    if (this.draining) return false;
    for (const name of this.probes.keys()) if (this.results.get(name) !== true) return false;
    return true;
  }

  /** Names of dependencies currently failing (for logs and readiness bodies, never for clients). */
  failing(): string[] {
    return [...this.probes.keys()].filter((n) => this.results.get(n) !== true);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private async probeAll(): Promise<void> {
    await Promise.all(
      [...this.probes].map(async ([name, probe]) => {
        if (this.running.has(name)) return; // still hung: already counted down at its timeout
        this.running.add(name);
        const answer = (async () => probe())().finally(() => this.running.delete(name));
        let ok = false;
        try {
          ok = await withTimeout(answer, Math.max(200, this.intervalMs - 100));
        } catch {
          ok = false;
        }
        const before = this.results.get(name);
        this.results.set(name, ok);
        if (before !== undefined && before !== ok) {
          this.logger.warn({ dependency: name, up: ok }, ok ? 'dependency recovered' : 'dependency down');
        }
      }),
    );
  }
}

async function withTimeout(p: Promise<boolean>, ms: number): Promise<boolean> {
  let t: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    t = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(t);
  }
}

/** grpc.health.v1.Health as Kubernetes gRPC probes and grpc_health_probe call it. */
export function healthService(
  state: HealthState,
  serviceNames: string[],
): ServiceImpl<typeof healthv1.Health> {
  const known = new Set(['', ...serviceNames]);
  const statusOf = (service: string) =>
    !known.has(service) ? Status.SERVICE_UNKNOWN : state.serving ? Status.SERVING : Status.NOT_SERVING;
  return {
    check(req) {
      const status = statusOf(req.service);
      if (status === Status.SERVICE_UNKNOWN) {
        // The protocol answers NOT_FOUND for an unknown service name on Check.
        throw new ConnectError('unknown service', Code.NotFound);
      }
      return { status };
    },
    // Ends with NOT_SERVING once draining starts: a served stream is held in flight until it ends, and
    // the drain waits for it (trackCalls), so a Watch that went on would hold every shutdown to its
    // bound. The watcher reconnects elsewhere, as after the GOAWAY of the drain.
    async *watch(req, ctx) {
      let last: number | undefined;
      while (!ctx.signal.aborted) {
        const status = statusOf(req.service);
        if (status !== last) {
          last = status;
          yield { status };
        }
        if (state.isDraining) return;
        await new Promise((r) => setTimeout(r, 500));
      }
    },
  };
}

/**
 * The largest request the probe listener reads: a HealthCheckRequest is a service name. Anything that
 * reaches the port, without a certificate, could otherwise make a service read connect's default 4 GiB.
 */
export const HEALTH_READ_MAX_BYTES = 4096;

/**
 * A plaintext HTTP/2 listener serving grpc.health.v1 and nothing else, for probes that present no
 * client certificate (kubelet, grpc_health_probe). `close()` also drops idle probe connections.
 */
export async function startHealthListener(
  state: HealthState,
  serviceNames: string[],
  port: number,
): Promise<{ port: number; close: () => void }> {
  const handler = connectNodeAdapter({
    routes: (router) => router.service(healthv1.Health, healthService(state, serviceNames)),
    readMaxBytes: HEALTH_READ_MAX_BYTES,
  });
  const server = http2.createServer(handler);
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '0.0.0.0', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close() {
      server.close();
      for (const s of sessions) s.destroy();
    },
  };
}
