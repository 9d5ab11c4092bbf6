import { createServer, type Server } from 'node:http';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { registerArrivalLag } from './caller-deadline.js';

export { Counter, Gauge, Histogram, Registry };

/** One registry per service process, with the default process and Node.js metrics. */
export function createMetricsRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  registerArrivalLag(registry);
  return registry;
}

/** Prometheus scrape endpoint on its own port, apart from the service's traffic. */
export async function startMetricsServer(
  registry: Registry,
  port: number,
  host = '0.0.0.0',
): Promise<Server> {
  const server = createServer(async (req, res) => {
    if (req.method === 'GET' && req.url === '/metrics') {
      try {
        const body = await registry.metrics();
        res.writeHead(200, { 'content-type': registry.contentType });
        res.end(body);
      } catch {
        res.writeHead(500).end();
      }
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}

export const LATENCY_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30,
];
