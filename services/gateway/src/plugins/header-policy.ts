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
  for (const [name, value] of policyHeaders(request.url)) reply.header(name, value);
}

const V1_HEADERS: readonly (readonly [string, string])[] = [
  ['x-retention', RETENTION.v1],
  ['cache-control', CACHE_CONTROL.v1],
];
const V2_HEADERS: readonly (readonly [string, string])[] = [
  ['x-retention', RETENTION.v2],
  ['cache-control', CACHE_CONTROL.v2],
];

const V1 = /^\/v1(?:[/?]|$)/;
const V2 = /^\/v2(?:[/?]|$)/;

/** The policy's headers for a request to `url` (`/v1` itself included): none outside v1 and v2. */
export function policyHeaders(url: string): readonly (readonly [string, string])[] {
  if (V1.test(url)) return V1_HEADERS;
  if (V2.test(url)) return V2_HEADERS;
  return [];
}
