import { Counter, Histogram, LATENCY_BUCKETS, type Logger, type Registry } from '@dnc/kit';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyRequest {
    /** Date.now() when the request arrived: the start of its budget and of its timing. */
    receivedAt: number;
  }
}

/**
 * Every request timed from its arrival (`request.receivedAt`, first of all hooks) and, once answered,
 * counted and timed by route template, method and status, and logged as one line (route template
 * only: never the URL's job id, a header or a body).
 */
export const requestMetrics = fp(
  async (app: FastifyInstance, opts: { metrics: Registry; logger: Logger }) => {
    const { logger } = opts;
    const requests = new Counter({
      name: 'dnc_http_requests_total',
      help: 'HTTP requests answered, by route template, method and status.',
      labelNames: ['route', 'method', 'status'],
      registers: [opts.metrics],
    });
    const duration = new Histogram({
      name: 'dnc_http_request_duration_seconds',
      help: 'HTTP request handling time, by route template and method.',
      labelNames: ['route', 'method'],
      buckets: LATENCY_BUCKETS,
      registers: [opts.metrics],
    });

    app.decorateRequest('receivedAt', 0);
    app.addHook('onRequest', async (request) => {
      request.receivedAt = Date.now();
    });
    app.addHook('onResponse', async (request, reply) => {
      const route = request.routeOptions.url ?? 'unmatched';
      const seconds = (Date.now() - (request.receivedAt || Date.now())) / 1000;
      requests.inc({ route, method: request.method, status: String(reply.statusCode) });
      duration.observe({ route, method: request.method }, seconds);
      // Successful requests are counted and timed by the metrics above and logged at debug only: a
      // log line per request is a write per request, which at thousands of scrubs a second costs more
      // than the scrub.
      const line = {
        method: request.method,
        route,
        status: reply.statusCode,
        ms: Math.round(seconds * 1000),
        // onResponse runs in the socket's callbacks, outside the request's context: name it here.
        request_id: request.requestId,
      };
      if (reply.statusCode < 400) logger.debug(line, 'request');
      else logger.info(line, 'request');
    });
  },
  { name: 'request-metrics' },
);
