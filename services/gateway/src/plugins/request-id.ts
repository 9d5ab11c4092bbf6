import { acceptRequestId, REQUEST_ID_HEADER, runWithRequestId } from '@dnc/kit';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyRequest {
    /** The X-Request-Id of this request: the client's when well-formed, else a new UUID. */
    requestId: string;
  }
}

/**
 * Every response carries X-Request-Id (errors, 404 and 405 included): the client's own when well-formed
 * (1-128 of `A-Z a-z 0-9 . _ : -`), else a new UUID. From validation on, the request runs in that id's
 * context, so every log line and every internal call (Connect header, JetStream message header) of it
 * carries the id. The context is entered at preValidation: the body is read in the socket's own
 * callbacks, which would not keep a context entered earlier.
 */
export const requestId = fp(
  async (app: FastifyInstance) => {
    app.decorateRequest('requestId', '');
    app.addHook('onRequest', (request, reply, done) => {
      request.requestId = acceptRequestId(request.headers[REQUEST_ID_HEADER]);
      reply.header(REQUEST_ID_HEADER, request.requestId);
      runWithRequestId(request.requestId, done);
    });
    app.addHook('preValidation', (request, _reply, done) => {
      runWithRequestId(request.requestId, done);
    });
  },
  { name: 'request-id' },
);
