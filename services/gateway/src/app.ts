import { LIMITS } from '@dnc/api-contract';
import { acceptRequestId, type HealthState, type Logger, REQUEST_ID_HEADER, type Registry } from '@dnc/kit';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import { authentication } from './auth.js';
import type { GatewayConfig } from './config.js';
import { StopClock } from './deadline.js';
import { sendMapped, toHttp } from './errors.js';
import { fingerprint } from './fingerprint.js';
import type { Fingerprinter } from './flows/admit.js';
import { EARLY_CHECK_DEFAULTS, EarlyChecks } from './flows/early-check.js';
import type { Upstream } from './flows/port.js';
import { maxLengthByUnitsFirst } from './max-length.js';
import { errorHandler } from './plugins/error-handler.js';
import { applyHeaderPolicy, headerPolicy } from './plugins/header-policy.js';
import { clientErrorHandler, LingeringClose, SocketRequests } from './plugins/lingering-close.js';
import { methodNotAllowed } from './plugins/method-not-allowed.js';
import { requestMetrics } from './plugins/metrics.js';
import { openApi } from './plugins/openapi.js';
import { requestBounds } from './plugins/request-bounds.js';
import { requestId } from './plugins/request-id.js';
import { systemRoutes } from './routes/system.js';
import { v1Routes } from './routes/v1.js';
import { v2Routes } from './routes/v2.js';

/** An absolute-form request target (`http://host/path`, RFC 9112 3.2.2): its scheme and authority. */
const ABSOLUTE_FORM = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/;
/** An escaped RFC 3986 unreserved character (letters, digits, - . _ ~): the same character escaped or not. */
const ESCAPED_UNRESERVED = /%(?:[46][1-9a-f]|[57][0-9a]|3[0-9]|2[de]|5f|7e)/gi;

/**
 * The URL every hook and the router read, in the one form the router matches: an absolute-form target
 * as its path, escapes of unreserved characters decoded (RFC 3986 6.2.2.2: `/v%31/scrub` is `/v1/scrub`,
 * which the router matched while the hooks saw the raw path, and answered without the retention headers),
 * and the `%` of a path that is not valid percent-encoding escaped (the query is left alone: the routes
 * read none).
 */
export function canonicalUrl(raw: string): string {
  const url = raw.startsWith('/') ? raw : raw.replace(ABSOLUTE_FORM, '') || '/';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  if (!path.includes('%')) return url;
  const query = q === -1 ? '' : url.slice(q);
  try {
    decodeURIComponent(path);
  } catch {
    return path.replaceAll('%', '%25') + query;
  }
  return (
    path.replace(ESCAPED_UNRESERVED, (escaped) =>
      String.fromCharCode(Number.parseInt(escaped.slice(1), 16)),
    ) + query
  );
}

export interface AppDeps {
  config: GatewayConfig;
  upstream: Upstream;
  health: HealthState;
  logger: Logger;
  metrics: Registry;
  /** Set when the process begins to stop (server.ts); v2 admissions end inside its bound. */
  stopping?: StopClock;
}

/**
 * The public surface, HTTP concerns only. Plugins in a fixed order: the request id, timing and metrics (so a
 * request's budget starts when it arrives), authentication, header policy, 405/404, the one error
 * handler (before the routes, so it is in force for all of them), then the routes and the OpenAPI
 * document.
 */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, upstream, health, logger, metrics } = deps;
  const lingering = new LingeringClose(config.DNC_REQUEST_TIMEOUT_MS);
  const requests = new SocketRequests();
  const app = Fastify({
    // The service's redacting logger, so `request.log` lines are kept; fastify's own per-request
    // lines are off (the metrics plugin logs the route template, status and time instead).
    loggerInstance: logger as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: LIMITS.maxBodyBytes,
    // Issue 15: a slow client holds a socket (and a body buffer) only so long. Headers, then the whole
    // request, each within a bound; a socket silent both ways (an answer never read) is closed. Node
    // checks the first two every `connectionsCheckingInterval`.
    requestTimeout: config.DNC_REQUEST_TIMEOUT_MS,
    connectionTimeout: config.DNC_SOCKET_IDLE_TIMEOUT_MS,
    keepAliveTimeout: config.DNC_KEEP_ALIVE_TIMEOUT_MS,
    http: { headersTimeout: config.DNC_HEADERS_TIMEOUT_MS, connectionsCheckingInterval: 1_000 },
    clientErrorHandler: clientErrorHandler(lingering, requests, logger),
    // One form of the URL for the router and every hook (canonicalUrl): a path that is not valid
    // percent-encoding (`/v2/scrub/%E9`) is routed with its `%` taken literally, so it goes through every hook
    // (request id, authentication, rate limit, 405) and ends as any unknown id or path does.
    rewriteUrl: (req) => canonicalUrl(req.url ?? '/'),
    frameworkErrors: (error, request, reply) => {
      reply.header(REQUEST_ID_HEADER, acceptRequestId(request.headers[REQUEST_ID_HEADER]));
      applyHeaderPolicy(request, reply);
      if (error.code !== 'FST_ERR_BAD_URL') return sendMapped(reply, toHttp('internal_error'));
      return sendMapped(reply, toHttp(request.url.startsWith('/v2/scrub/') ? 'job_not_found' : 'not_found'));
    },
    // A path parameter as long as a request line can be (Node refuses a head over 16 KiB): the router's
    // default gives up past 100 characters, before any hook runs (a long job id answered 500, not 404).
    routerOptions: { maxParamLength: 16_384 },
    exposeHeadRoutes: false,
    forceCloseConnections: 'idle',
    // A request that reaches a keep-alive connection while the gateway closes is answered through every
    // hook like any other (its connection closes after it); fastify's own 503 for it carried none of the
    // spec's headers and no stable error code. Load balancers stop sending during the drain delay.
    return503OnClosing: false,
    // X-Forwarded-For is believed for exactly the configured number of proxy hops, no more.
    trustProxy: (_address: string, hop: number) => hop < config.DNC_TRUST_PROXY_HOPS,
    ajv: {
      // Reject, never repair: unknown fields, wrong types and missing fields are 400s.
      customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false },
      // Ajv's maxLength, its code-point count skipped where the UTF-16 length already settles it.
      plugins: [maxLengthByUnitsFirst],
    },
  });
  requests.watch(app.server);

  // Only JSON is accepted (spec item 5: no CSV); any other media type is a validation error.
  app.removeContentTypeParser('text/plain');

  const fingerprintOf: Fingerprinter = (country, phones, canonical) =>
    fingerprint(config.DNC_FINGERPRINT_SECRET, config.DNC_FINGERPRINT_VERSION, country, phones, canonical);
  const { DNC_FINGERPRINT_PREVIOUS_SECRET: previousSecret, DNC_FINGERPRINT_PREVIOUS_VERSION: previous } =
    config;
  const previousFingerprint: Fingerprinter | undefined =
    previousSecret && previous
      ? (country, phones, canonical) => fingerprint(previousSecret, previous, country, phones, canonical)
      : undefined;
  const fingerprints = {
    fingerprint: fingerprintOf,
    ...(previousFingerprint ? { previousFingerprint } : {}),
  };

  await app.register(requestId);
  await app.register(requestMetrics, { metrics, logger });
  await app.register(authentication, { upstream });
  await app.register(requestBounds, {
    budgetBytes: config.DNC_BODY_MEMORY_BUDGET_MIB * 2 ** 20,
    waitMs: config.DNC_BODY_MEMORY_WAIT_MS,
    metrics,
    lingering,
  });
  await app.register(headerPolicy);
  await app.register(methodNotAllowed);
  await app.register(errorHandler, { upstream, logger });

  await app.register(systemRoutes(health));
  const early = config.DNC_EARLY_CHECK ? new EarlyChecks(EARLY_CHECK_DEFAULTS, metrics) : undefined;
  await app.register(v1Routes(config, { upstream, ...fingerprints, early }));
  await app.register(v2Routes(config, upstream, fingerprints, deps.stopping ?? new StopClock()));
  await app.register(openApi);
  return app;
}
