import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from '@dnc/kit';
import cookie from '@fastify/cookie';
import helmet from '@fastify/helmet';
import rateLimit from '@fastify/rate-limit';
import fastifyStatic from '@fastify/static';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import type { Redis } from 'ioredis';
import { PasswordChecksBusy } from './domain/password.js';
import { confirmRoutes } from './routes/confirm.js';
import type { RouteDeps } from './routes/deps.js';
import { meRoutes } from './routes/me.js';
import { organizationRoutes } from './routes/organization.js';
import { peopleRoutes } from './routes/people.js';
import { sessionRoutes } from './routes/session.js';
import { HttpError } from './upstream.js';

export interface AppOptions {
  deps: RouteDeps;
  logger: Logger;
  /** The built front end (index.html and assets/). */
  assetsDir: string;
  /** Sign-in rate limit counters; without it they are per process. */
  redis?: Redis;
  redisPrefix: string;
  trustProxyHops: number;
  /** Readiness: false while draining or while Postgres is unreachable. */
  ready: () => boolean;
  /** Headers and body of a request arrive within this (DNC_DASHBOARD_REQUEST_TIMEOUT_MS). */
  requestTimeoutMs: number;
}

/** A socket silent both ways (no request coming, an answer not read) this long is closed. */
const SOCKET_IDLE_TIMEOUT_MS = 30_000;

/**
 * Content-Security-Policy: everything from the dashboard's own origin, nothing inline (no
 * 'unsafe-inline' for scripts or styles), no framing, no plugins, forms and fetches only to itself.
 */
export const CSP = {
  defaultSrc: ["'self'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'self'"],
  imgSrc: ["'self'", 'data:'],
  fontSrc: ["'self'"],
  connectSrc: ["'self'"],
  objectSrc: ["'none'"],
  baseUri: ["'none'"],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
  upgradeInsecureRequests: null,
};

/** The backend-for-frontend: JSON under /api, the built front end for everything else. */
export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const { deps, logger } = opts;
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: 16 * 1024,
    // A slow client holds a socket only so long (DNC_DASHBOARD_REQUEST_TIMEOUT_MS); Node checks every second.
    requestTimeout: opts.requestTimeoutMs,
    connectionTimeout: SOCKET_IDLE_TIMEOUT_MS,
    http: { headersTimeout: opts.requestTimeoutMs, connectionsCheckingInterval: 1_000 },
    exposeHeadRoutes: false,
    forceCloseConnections: 'idle',
    return503OnClosing: true,
    trustProxy: (_address: string, hop: number) => hop < opts.trustProxyHops,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false } },
  });
  app.removeContentTypeParser('text/plain');

  await securityPlugins(app, opts);

  // Nothing but the hashed assets is cached anywhere: not the API (the one response with a key's
  // secret included), not the pages.
  app.addHook('onSend', async (request, reply, payload) => {
    if (!request.url.startsWith('/assets/')) {
      reply.header('cache-control', 'no-store');
      reply.header('pragma', 'no-cache');
    }
    return payload;
  });

  app.addHook('onResponse', async (request, reply) => {
    // Route template and status only: never a URL with an id, a header or a body.
    const line = {
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status: reply.statusCode,
    };
    if (reply.statusCode >= 500) logger.warn(line, 'request');
    else logger.debug(line, 'request');
  });

  // Before the routes: a route keeps the error handler in force when it was added.
  app.setErrorHandler(errorHandler(logger));
  // Probes of the browser-facing port (the chart's HTTP probes, as for the gateway).
  app.get('/v1/health', async () => ({ ok: true }));
  app.get('/v1/ready', async (_request, reply) =>
    opts.ready() ? { ok: true } : reply.code(503).send({ ok: false, error: 'not_ready' }),
  );
  sessionRoutes(app, deps);
  organizationRoutes(app, deps);
  peopleRoutes(app, deps);
  meRoutes(app, deps);
  confirmRoutes(app, deps);

  await serveFrontEnd(app, opts.assetsDir);
  return app;
}

/** Cookies, security headers (CSP, no Referer, ...) and the sign-in rate limit. */
async function securityPlugins(app: FastifyInstance, opts: AppOptions): Promise<void> {
  await app.register(cookie);
  await app.register(helmet, {
    contentSecurityPolicy: { useDefaults: false, directives: CSP },
    referrerPolicy: { policy: 'no-referrer' },
    crossOriginEmbedderPolicy: false,
  });
  await app.register(rateLimit, {
    global: false,
    ...(opts.redis ? { redis: opts.redis, nameSpace: `${opts.redisPrefix}dashboard-sign-in-` } : {}),
    // Redis down: the per-email lockout in Postgres still holds, so the limit degrades open.
    skipOnError: true,
    errorResponseBuilder: (_request, context) => ({
      statusCode: 429,
      error: 'too_many_attempts',
      message: `Too many attempts from this address: wait ${Math.ceil(context.ttl / 1000)} seconds.`,
    }),
  });
}

/** One error handler: a stable code and a message to show; 5xx bodies are generic. */
function errorHandler(logger: Logger) {
  return (error: FastifyError | HttpError, _request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof HttpError)
      return reply.code(error.status).send({ error: error.code, message: error.message });
    // Nothing was judged (no failure counted, no sign-in): the same answer for every email.
    if (error instanceof PasswordChecksBusy)
      return reply
        .code(503)
        .header('retry-after', '1')
        .send({ error: 'busy', message: 'Too many sign-ins at this moment; try again in a few seconds.' });
    if (error.validation)
      return reply.code(400).send({ error: 'validation_error', message: 'The request is not valid.' });
    if (error.statusCode === 429)
      return reply.code(429).send({ error: 'too_many_attempts', message: error.message });
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500)
      return reply
        .code(error.statusCode)
        .send({ error: 'bad_request', message: 'The request is not valid.' });
    logger.error({ err: error }, 'request failed');
    return reply.code(500).send({ error: 'internal_error', message: 'Something went wrong; try again.' });
  };
}

/**
 * The built front end: hashed files under /assets/ (cached for good), and index.html for every page of
 * the single-page app; anything else is the JSON 404.
 */
async function serveFrontEnd(app: FastifyInstance, assetsDir: string): Promise<void> {
  const index = path.join(assetsDir, 'index.html');
  if (!existsSync(index)) throw new Error(`the front end is not built: ${index} is missing (npm run build)`);
  const indexHtml = readFileSync(index);
  await app.register(fastifyStatic, {
    root: path.join(assetsDir, 'assets'),
    prefix: '/assets/',
    wildcard: false,
    index: false,
    // Hashed file names: a new build has new names, so an asset never changes under its name.
    immutable: true,
    maxAge: '365d',
  });
  app.get('/favicon.svg', (_request, reply) =>
    reply.type('image/svg+xml').sendFile('favicon.svg', assetsDir, { maxAge: '1d' }),
  );

  app.setNotFoundHandler((request, reply) => {
    // Pages of the single-page front end (/, /keys, /jobs/<id>, ...) are all index.html.
    if (request.method === 'GET' && !request.url.startsWith('/api/') && !request.url.startsWith('/assets/'))
      return reply.type('text/html; charset=utf-8').send(indexHtml);
    return reply.code(404).send({ error: 'not_found', message: 'Not found.' });
  });
}
