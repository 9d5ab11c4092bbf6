import { CACHE_CONTROL, RETENTION } from '@dnc/api-contract';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

/**
 * Spec, Endpoints/Common: every v1 response (errors, health and ready included) is zero-retention and
 * not cacheable; every v2 response is transient-encrypted.
 */
export const headerPolicy = fp(
  async (app: FastifyInstance) => {
    app.addHook('onSend', async (request, reply, payload) => {
      applyHeaderPolicy(request, reply);
      return payload;
    });
  },
  { name: 'header-policy' },
);

/** The headers of the policy, for answers sent where no hook runs (fastify's framework errors). */
export function applyHeaderPolicy(request: FastifyRequest, reply: FastifyReply): void {
  if (request.url.startsWith('/v1/')) {
    reply.header('x-retention', RETENTION.v1);
    reply.header('cache-control', CACHE_CONTROL.v1);
  } else if (request.url.startsWith('/v2/')) {
    reply.header('x-retention', RETENTION.v2);
    reply.header('cache-control', CACHE_CONTROL.v2);
  }
}
