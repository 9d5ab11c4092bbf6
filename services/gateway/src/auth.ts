import { findDetail } from '@dnc/kit';
import { admissionv1 } from '@dnc/proto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AdmissionClient } from './clients.js';
import { fromRpcError, sendMapped } from './errors.js';

export interface AuthContext {
  orgId: string;
  keyId: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    auth?: AuthContext;
  }
  interface FastifyContextConfig {
    /** The route needs `Authorization: Bearer <API_KEY>`. */
    auth?: boolean;
  }
}

const BEARER = /^Bearer ([\x21-\x7E]{1,512})$/;

function setRateLimitHeaders(reply: FastifyReply, info: admissionv1.RateLimitInfo | undefined): void {
  if (!info) return;
  const limit = String(info.limit);
  const remaining = String(info.remaining);
  const reset = String(info.resetUnix);
  reply.header('x-ratelimit-limit', limit);
  reply.header('x-ratelimit-remaining', remaining);
  reply.header('x-ratelimit-reset', reset);
  reply.header('ratelimit-limit', limit);
  reply.header('ratelimit-remaining', remaining);
  reply.header('ratelimit-reset', reset);
}

/**
 * onRequest hook: authentication and the technical rate limit run before the body is read, so an
 * unauthenticated or over-limit client never costs a 25 MiB parse. A malformed header is passed on
 * as an empty key so that admission's abuse guard counts it like any failed authentication.
 */
export function authenticate(admission: AdmissionClient) {
  return async function authHook(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (!request.routeOptions.config.auth) return;
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? BEARER.exec(header) : null;
    try {
      const res = await admission.authenticate(
        { apiKey: match?.[1] ?? '', clientAddress: request.ip },
        { timeoutMs: 3_000 },
      );
      request.auth = { orgId: res.orgId, keyId: res.keyId };
      setRateLimitHeaders(reply, res.rateLimit);
    } catch (error) {
      // Spec, Authentication 3: a 401 carries no rate-limit headers; a 429 after authentication does.
      setRateLimitHeaders(reply, findDetail(error, admissionv1.RateLimitInfoSchema));
      return void sendMapped(reply, fromRpcError(error));
    }
  };
}
