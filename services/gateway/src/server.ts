import type { AddressInfo } from 'node:net';
import { type Service, startService } from '@dnc/kit';
import { healthv1 } from '@dnc/proto';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import type { GatewayConfig } from './config.js';
import { StopClock } from './deadline.js';
import { connectUpstreams } from './upstream/clients.js';
import { upstreamPort } from './upstream/port.js';

export interface RunningGateway {
  service: Service;
  app: FastifyInstance;
  port: number;
}

/** Everything of the gateway process except signal handling: the public HTTP surface on its port. */
export function startGateway(config: GatewayConfig): Promise<RunningGateway> {
  return startService('gateway', config, async (service) => {
    const clients = connectUpstreams(config.DNC_ADMISSION_ADDR, config.DNC_JOBS_ADDR, service.security);
    // Ready only while admission (and through it, Postgres) answers SERVING.
    service.health.require('admission', async () => {
      const r = await clients.admissionHealth.check({ service: '' }, { timeoutMs: 800 });
      return r.status === healthv1.HealthCheckResponse_ServingStatus.SERVING;
    });
    await service.health.start();
    await service.startMetrics();
    const stopping = new StopClock();
    const app = await buildApp({
      config,
      upstream: upstreamPort(clients, service.metrics),
      health: service.health,
      logger: service.logger,
      metrics: service.metrics,
      stopping,
    });
    await app.listen({ port: config.DNC_GATEWAY_PORT, host: config.DNC_GATEWAY_HOST });
    service.onClose('http server', () => {
      // The first closer to run (closers run in reverse): the shutdown bound counts from about now.
      stopping.begin(config.DNC_SHUTDOWN_TIMEOUT_MS);
      return drain(app, config.DNC_DRAIN_DELAY_MS);
    });
    const { port } = app.server.address() as AddressInfo;
    service.logger.info({ port }, 'gateway listening');
    return { service, app, port };
  });
}

/** Readiness already answers 503: let load balancers notice, then finish in-flight requests and close. */
async function drain(app: FastifyInstance, delayMs: number): Promise<void> {
  if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
  // In-flight requests finish; keep-alive connections are closed as soon as they turn idle (otherwise
  // a client's idle connection would hold the drain until its keep-alive timeout).
  const idle = setInterval(() => app.server.closeIdleConnections(), 100);
  try {
    await app.close();
  } finally {
    clearInterval(idle);
  }
}
