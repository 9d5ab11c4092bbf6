import { fileURLToPath } from 'node:url';
import { loadConfig, runMain, Service } from '@dnc/kit';
import { healthv1 } from '@dnc/proto';
import { buildApp } from './app.js';
import { gatewayConfig } from './config.js';
import { connectUpstreams } from './upstream/clients.js';
import { upstreamPort } from './upstream/port.js';

export async function main(): Promise<void> {
  const config = loadConfig(gatewayConfig);
  const service = new Service({
    name: 'gateway',
    version: process.env['npm_package_version'] ?? '0.1.0',
    logLevel: config.DNC_LOG_LEVEL,
    shutdownTimeoutMs: config.DNC_SHUTDOWN_TIMEOUT_MS,
    metricsPort: config.DNC_METRICS_PORT,
  });
  service.handleSignals();
  const clients = connectUpstreams(config.DNC_ADMISSION_ADDR, config.DNC_JOBS_ADDR);
  // Ready only while admission (and through it, Postgres) answers SERVING.
  service.health.require('admission', async () => {
    const r = await clients.admissionHealth.check({ service: '' }, { timeoutMs: 800 });
    return r.status === healthv1.HealthCheckResponse_ServingStatus.SERVING;
  });
  await service.health.start();
  await service.startMetrics();
  const app = await buildApp({
    config,
    upstream: upstreamPort(clients, service.metrics),
    health: service.health,
    logger: service.logger,
    metrics: service.metrics,
  });
  await app.listen({ port: config.DNC_GATEWAY_PORT, host: config.DNC_GATEWAY_HOST });
  service.onClose('http server', async () => {
    // Readiness already answers 503; give load balancers time to notice before closing the listener.
    if (config.DNC_DRAIN_DELAY_MS > 0) await new Promise((r) => setTimeout(r, config.DNC_DRAIN_DELAY_MS));
    // In-flight requests finish; keep-alive connections are closed as soon as they turn idle
    // (otherwise a client's idle connection would hold the drain until its keep-alive timeout).
    const idle = setInterval(() => app.server.closeIdleConnections(), 100);
    try {
      await app.close();
    } finally {
      clearInterval(idle);
    }
  });
  service.logger.info({ port: config.DNC_GATEWAY_PORT }, 'gateway listening');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) void runMain('gateway', main);
