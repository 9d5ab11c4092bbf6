import { buildOpenApiDocument, CACHE_CONTROL, LIMITS, RETENTION } from '@dnc/api-contract';
import { Counter, type HealthState, Histogram, LATENCY_BUCKETS, type Logger, type Registry } from '@dnc/kit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  LogController,
} from 'fastify';
import { authenticate, authenticateBeforeRefusal } from './auth.js';
import type { Upstreams } from './clients.js';
import type { GatewayConfig } from './config.js';
import { PublicHttpError, sendMapped, toHttp } from './errors.js';
import { systemRoutes } from './routes/system.js';
import { v1Routes } from './routes/v1.js';
import { v2Routes } from './routes/v2.js';

export interface AppDeps {
  config: GatewayConfig;
  upstreams: Upstreams;
  health: HealthState;
  logger: Logger;
  metrics: Registry;
}

interface KnownRoute {
  pattern: RegExp;
  methods: Set<string>;
}

/**
 * The public surface, HTTP concerns only. Plugins in a fixed order: hooks (timing, authentication,
 * header policy), routes, then the 404/405 handler and the one error handler.
 */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, upstreams, health, logger, metrics } = deps;
  const app = Fastify({
    // The service's redacting logger, so `request.log` lines are kept; fastify's own per-request
    // lines are off (the onResponse hook logs the route template, status and time instead).
    loggerInstance: logger as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: LIMITS.maxBodyBytes,
    exposeHeadRoutes: false,
    forceCloseConnections: 'idle',
    return503OnClosing: true,
    // X-Forwarded-For is believed for exactly the configured number of proxy hops, no more.
    trustProxy: (_address: string, hop: number) => hop < config.DNC_TRUST_PROXY_HOPS,
    ajv: {
      // Reject, never repair: unknown fields, wrong types and missing fields are 400s.
      customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false },
    },
  });

  // Only JSON is accepted (spec item 5: no CSV); any other media type is a validation error.
  app.removeContentTypeParser('text/plain');

  const requests = new Counter({
    name: 'dnc_http_requests_total',
    help: 'HTTP requests answered, by route template, method and status.',
    labelNames: ['route', 'method', 'status'],
    registers: [metrics],
  });
  const duration = new Histogram({
    name: 'dnc_http_request_duration_seconds',
    help: 'HTTP request handling time, by route template and method.',
    labelNames: ['route', 'method'],
    buckets: LATENCY_BUCKETS,
    registers: [metrics],
  });

  app.addHook('onRequest', async (request) => {
    request.receivedAt = Date.now();
  });
  app.addHook('onRequest', authenticate(upstreams.admission));

  // Spec, Endpoints/Common: every v1 response (errors, health and ready included) is zero-retention
  // and not cacheable; every v2 response is transient-encrypted.
  app.addHook('onSend', async (request, reply, payload) => {
    if (request.url.startsWith('/v1/')) {
      reply.header('x-retention', RETENTION.v1);
      reply.header('cache-control', CACHE_CONTROL.v1);
    } else if (request.url.startsWith('/v2/')) {
      reply.header('x-retention', RETENTION.v2);
      reply.header('cache-control', CACHE_CONTROL.v2);
    }
    return payload;
  });

  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const seconds = (Date.now() - (request.receivedAt ?? Date.now())) / 1000;
    requests.inc({ route, method: request.method, status: String(reply.statusCode) });
    duration.observe({ route, method: request.method }, seconds);
    // Route template only: never the URL's job id, a header or a body. Successful requests are
    // counted and timed by the metrics above and logged at debug only: a log line per request is a
    // write per request, which at thousands of scrubs a second costs more than the scrub.
    const line = { method: request.method, route, status: reply.statusCode, ms: Math.round(seconds * 1000) };
    if (reply.statusCode < 400) logger.debug(line, 'request');
    else logger.info(line, 'request');
  });

  // Routes the 405 handler knows, collected as they are registered.
  const known: KnownRoute[] = [];
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const source = `^${route.url.replace(/:[A-Za-z_]+/g, '[^/]+')}$`;
    const existing = known.find((k) => k.pattern.source === source);
    if (existing) for (const m of methods) existing.methods.add(m);
    else known.push({ pattern: new RegExp(source), methods: new Set(methods) });
  });

  // Before the routes: a plugin keeps the error handler in force when it is registered.
  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    // A refusal never comes before authentication (check order), also when it rode with Admit.
    if (!(await authenticateBeforeRefusal(upstreams.admission, request, reply))) return reply;
    if (error instanceof PublicHttpError) {
      return sendMapped(reply, toHttp(error.code, error.message, error.retryAfterSeconds));
    }
    if (error.validation) {
      const tooMany = error.validation.some((v) => v.keyword === 'maxItems' && v.instancePath === '/phones');
      if (tooMany) {
        const v1 = request.url.startsWith('/v1/');
        return sendMapped(
          reply,
          toHttp(
            'payload_too_large',
            v1
              ? `At most ${LIMITS.v1MaxInputs.toLocaleString('en-US')} phones per request; submit larger lists to POST /v2/scrub.`
              : `At most ${LIMITS.v2MaxInputs.toLocaleString('en-US')} phones per job.`,
          ),
        );
      }
      // ajv messages name the field and the rule, never the submitted value.
      return sendMapped(reply, toHttp('validation_error', `Invalid request: ${error.message}.`));
    }
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return sendMapped(reply, toHttp('payload_too_large', 'The body exceeds 26,214,400 bytes.'));
    }
    if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return sendMapped(
        reply,
        toHttp('validation_error', 'Send a JSON body with Content-Type: application/json.'),
      );
    }
    if ((error.statusCode ?? 500) < 500) {
      // JSON syntax errors and the like: the parser's message can quote the body, so it is not echoed.
      return sendMapped(reply, toHttp('validation_error', 'The body must be a valid JSON object.'));
    }
    logger.error(
      { route: request.routeOptions.url, err: { type: error.name, code: error.code } },
      'unhandled error',
    );
    return sendMapped(reply, toHttp('internal_error'));
  });

  await app.register(systemRoutes(health));
  await app.register(v1Routes(config, upstreams));
  await app.register(v2Routes(config, upstreams));

  // The interface description (no authentication) and a docs page rendered from the same document.
  const document = buildOpenApiDocument();
  app.get('/openapi.json', async () => document);
  await app.register(swagger, { mode: 'static', specification: { document: document as never } });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { docExpansion: 'list', deepLinking: true },
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? request.url;
    const route = known.find((k) => k.pattern.test(path));
    if (route && !route.methods.has(request.method)) {
      reply.header('allow', [...route.methods].sort().join(', '));
      return sendMapped(
        reply,
        toHttp('method_not_allowed', `Use ${[...route.methods].sort().join(' or ')}.`),
      );
    }
    return sendMapped(reply, toHttp('not_found', 'No such endpoint.'));
  });

  return app;
}
