import { LIMITS } from '@dnc/api-contract';
import type { Logger } from '@dnc/kit';
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { authenticateBeforeRefusal } from '../auth.js';
import { type MappedError, PublicHttpError, sendMapped, toHttp } from '../errors.js';
import type { Upstream } from '../flows/port.js';

/** The public error of a failure fastify or a route raised; undefined for an unexpected one. */
function publicErrorOf(error: FastifyError, request: FastifyRequest): MappedError | undefined {
  if (error instanceof PublicHttpError) {
    return toHttp(error.code, error.message, error.retryAfterSeconds);
  }
  if (error.validation) {
    const tooMany = error.validation.some((v) => v.keyword === 'maxItems' && v.instancePath === '/phones');
    if (tooMany) {
      return toHttp(
        'payload_too_large',
        request.url.startsWith('/v1/')
          ? `At most ${LIMITS.v1MaxInputs.toLocaleString('en-US')} phones per request; submit larger lists to POST /v2/scrub.`
          : `At most ${LIMITS.v2MaxInputs.toLocaleString('en-US')} phones per job.`,
      );
    }
    // ajv messages name the field and the rule, never the submitted value.
    return toHttp('validation_error', `Invalid request: ${error.message}.`);
  }
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return toHttp('payload_too_large', 'The body exceeds 26,214,400 bytes.');
  }
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return toHttp('validation_error', 'Send a JSON body with Content-Type: application/json.');
  }
  if ((error.statusCode ?? 500) < 500) {
    // JSON syntax errors and the like: the parser's message can quote the body, so it is not echoed.
    return toHttp('validation_error', 'The body must be a valid JSON object.');
  }
  return undefined;
}

/**
 * The one error handler: 4xx answers say what to fix, 5xx bodies are generic, and nothing of the
 * error (a stack, a quoted body) reaches the client. Register it before the routes, so that it is
 * the handler in force for every one of them.
 */
export const errorHandler = fp(
  async (app: FastifyInstance, opts: { upstream: Pick<Upstream, 'authenticate'>; logger: Logger }) => {
    app.setErrorHandler(async (error: FastifyError, request, reply) => {
      // A request no route takes whose body failed to parse (a malformed Content-Type, a QUERY without
      // one): the method or the path is what is wrong, answered as the not-found handler does (405, 404).
      if (request.is404) return app.refuseUnrouted(request, reply);
      // A refusal never comes before authentication (check order), also when it rides with Admit.
      if (!(await authenticateBeforeRefusal(opts.upstream, request, reply))) return reply;
      const mapped = publicErrorOf(error, request);
      if (mapped) return sendMapped(reply, mapped);
      opts.logger.error(
        { route: request.routeOptions.url, err: { type: error.name, code: error.code } },
        'unhandled error',
      );
      return sendMapped(reply, toHttp('internal_error'));
    });
  },
  { name: 'error-handler' },
);
