import {
  acceptRequestId,
  REQUEST_ID_HEADER,
  runWithRequestId,
  type Span,
  startServerSpan,
  type TraceContext,
  withTraceContext,
} from '@dnc/kit';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyRequest {
    /** The X-Request-Id of this request: the client's when well-formed, else a new UUID. */
    requestId: string;
    /** The request's SERVER span (a no-op span when tracing is off) and its context. */
    trace: { span: Span; context: TraceContext } | undefined;
  }
}

/**
 * Every response carries X-Request-Id (errors, 404 and 405 included): the client's own when well-formed
 * (1-128 of `A-Z a-z 0-9 . _ : -`), else a new UUID. The request gets a SERVER span (child of the client's
 * `traceparent`, when tracing is configured). From validation on, the request runs in the context of both,
 * so every log line, internal call (Connect headers) and JetStream message of it carries the id and the
 * trace. The context is entered at preValidation: the body is read in the socket's own callbacks, which
 * would not keep a context entered earlier.
 */
export const requestId = fp(
  async (app: FastifyInstance) => {
    app.decorateRequest('requestId', '');
    app.decorateRequest('trace', undefined);
    app.addHook('onRequest', (request, reply, done) => {
      request.requestId = acceptRequestId(request.headers[REQUEST_ID_HEADER]);
      reply.header(REQUEST_ID_HEADER, request.requestId);
      const route = request.routeOptions.url ?? 'unmatched';
      request.trace = startServerSpan(`${request.method} ${route}`, request.headers, {
        'http.request.method': request.method,
        'http.route': route,
      });
      runWithRequestId(request.requestId, done);
    });
    app.addHook('preValidation', (request, _reply, done) => {
      const ctx = request.trace?.context;
      runWithRequestId(request.requestId, () => (ctx ? withTraceContext(ctx, done) : done()));
    });
    app.addHook('onResponse', async (request, reply) => {
      request.trace?.span.setAttribute('http.response.status_code', reply.statusCode);
      request.trace?.span.end();
    });
  },
  { name: 'request-id' },
);
