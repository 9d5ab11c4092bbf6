import { findDetail } from '@dnc/kit';
import { admissionv1 } from '@dnc/proto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AdmissionClient } from './clients.js';
import { fromRpcError, sendMapped } from './errors.js';

export interface AuthContext {
  orgId: string;
  keyId: string;
}

/** The key and address a request presented, when its authentication rides with Admit. */
export interface PresentedCredentials {
  apiKey: string;
  clientAddress: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    auth?: AuthContext;
    /** Set instead of `auth` when authentication is left to admission.Admit (see authenticate). */
    credentials?: PresentedCredentials;
  }
  interface FastifyContextConfig {
    /** The route needs `Authorization: Bearer <API_KEY>`. */
    auth?: boolean;
    /** A small body may be read before authentication, which then runs inside admission.Admit. */
    authWithAdmit?: boolean;
  }
}

/**
 * Largest declared body whose authentication may ride with Admit: reading and validating 64 KiB
 * costs an unauthenticated client about as little as the Authenticate call it saves us.
 */
export const AUTH_WITH_ADMIT_MAX_BYTES = 64 * 1024;

const BEARER = /^Bearer ([\x21-\x7E]{1,512})$/;

export function setRateLimitHeaders(reply: FastifyReply, info: admissionv1.RateLimitInfo | undefined): void {
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

function presented(request: FastifyRequest): PresentedCredentials {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? BEARER.exec(header) : null;
  return { apiKey: match?.[1] ?? '', clientAddress: request.ip };
}

function declaredSmall(request: FastifyRequest): boolean {
  const declared = request.headers['content-length'];
  if (typeof declared !== 'string' || !/^[0-9]{1,9}$/.test(declared)) return false;
  return Number(declared) <= AUTH_WITH_ADMIT_MAX_BYTES;
}

async function authenticateNow(
  admission: AdmissionClient,
  request: FastifyRequest,
  reply: FastifyReply,
  credentials: PresentedCredentials,
): Promise<boolean> {
  try {
    const res = await admission.authenticate(credentials, { timeoutMs: 3_000 });
    request.auth = { orgId: res.orgId, keyId: res.keyId };
    setRateLimitHeaders(reply, res.rateLimit);
    return true;
  } catch (error) {
    // Spec, Authentication 3: a 401 carries no rate-limit headers; a 429 after authentication does.
    setRateLimitHeaders(reply, findDetail(error, admissionv1.RateLimitInfoSchema));
    sendMapped(reply, fromRpcError(error));
    return false;
  }
}

/**
 * onRequest hook: authentication and the technical rate limit run before the body is read, so an
 * unauthenticated or over-limit client never costs a 25 MiB parse. A malformed header is passed on
 * as an empty key so that admission's abuse guard counts it like any failed authentication.
 *
 * On a route marked `authWithAdmit` (POST /v1/scrub) a body declared at most AUTH_WITH_ADMIT_MAX_BYTES
 * is read first and the key travels with admission.Admit: one internal call instead of two on the
 * platform's hottest path. The check order does not change: a request refused by the gateway before
 * Admit (body, Idempotency-Key) is authenticated first by `authenticateBeforeRefusal`.
 */
export function authenticate(admission: AdmissionClient) {
  return async function authHook(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const config = request.routeOptions.config;
    if (!config.auth) return;
    const credentials = presented(request);
    if (config.authWithAdmit && declaredSmall(request)) {
      request.credentials = credentials;
      return;
    }
    await authenticateNow(admission, request, reply, credentials);
  };
}

/**
 * Before the gateway refuses a request whose authentication was left to Admit, authenticate it: an
 * unknown key gets its 401 (and the abuse guard its count) ahead of a 400 or 413, and an accepted
 * one its rate-limit headers. False when the authentication failure was answered instead.
 */
export async function authenticateBeforeRefusal(
  admission: AdmissionClient,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<boolean> {
  if (!request.credentials || request.auth) return true;
  return authenticateNow(admission, request, reply, request.credentials);
}
