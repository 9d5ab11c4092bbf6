import { findDetail } from '@dnc/kit';
import { admissionv1 } from '@dnc/proto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { fromRpcError, sendMapped } from './errors.js';
import type { PresentedCredentials, Upstream } from './flows/port.js';

/** A request authenticated by admission.Authenticate before its body was read. */
export interface AuthenticatedCaller {
  readonly kind: 'authenticated';
  readonly orgId: string;
  readonly keyId: string;
  /**
   * Admission's signed assertion that this request acts for `orgId`, sent with every job-scheduler
   * call: the scheduler acts for no organization without it (docs/security.md).
   */
  readonly orgAssertion: string;
}

/** A small scrub whose key travels with admission.Admit (steps 0-3 run at the start of Admit). */
export interface DeferredCaller {
  readonly kind: 'deferred';
  readonly credentials: PresentedCredentials;
}

/**
 * Who a request is, as far as the gateway knows: the one answer to "is this request authenticated,
 * and by whom". Set for every request by the authentication hook; after Admit ran for a deferred
 * caller it is `checked_by_admit` (authenticated or refused there), so no later error authenticates
 * the request a second time (the rate limit counts each request once).
 */
export type Caller =
  | { readonly kind: 'anonymous' }
  | AuthenticatedCaller
  | DeferredCaller
  | { readonly kind: 'checked_by_admit' };

/** The callers a scrub can be admitted for. */
export type ScrubCaller = AuthenticatedCaller | DeferredCaller;

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller;
  }
  interface FastifyContextConfig {
    /** The route needs `Authorization: Bearer <API_KEY>`. */
    auth?: boolean;
    /** A small body may be read before authentication, which then runs inside admission.Admit. */
    authWithAdmit?: boolean;
  }
}

const ANONYMOUS: Caller = Object.freeze({ kind: 'anonymous' });
const CHECKED_BY_ADMIT: Caller = Object.freeze({ kind: 'checked_by_admit' });

/**
 * Largest declared body whose authentication may ride with Admit: reading and validating 64 KiB
 * costs an unauthenticated client about as little as the Authenticate call it saves us.
 */
export const AUTH_WITH_ADMIT_MAX_BYTES = 64 * 1024;

/**
 * `Authorization: Bearer <API_KEY>`. The scheme is a case-insensitive token followed by one or more
 * spaces (RFC 9110 11.1 and 11.4, RFC 6750 2.1): `bearer <key>` is the same credential. Anything else
 * is a malformed header (an empty key: admission's 401, counted by the abuse guard).
 */
const BEARER = /^bearer +([\x21-\x7E]{1,512})$/i;

/** The caller of a route marked `auth`; anything else is a wiring mistake (an internal error). */
export function authenticatedCaller(request: FastifyRequest): AuthenticatedCaller {
  const { caller } = request;
  if (caller.kind !== 'authenticated') throw new Error('the route is not authenticated');
  return caller;
}

/** The caller of a scrub route: authenticated, or deferred to Admit. */
export function scrubCaller(request: FastifyRequest): ScrubCaller {
  const { caller } = request;
  if (caller.kind !== 'authenticated' && caller.kind !== 'deferred') {
    throw new Error('the route is not authenticated');
  }
  return caller;
}

/** Admit ran for this request: a deferred caller was authenticated (or refused) there. */
export function checkedByAdmit(request: FastifyRequest): void {
  if (request.caller.kind === 'deferred') request.caller = CHECKED_BY_ADMIT;
}

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
  upstream: Pick<Upstream, 'authenticate'>,
  request: FastifyRequest,
  reply: FastifyReply,
  credentials: PresentedCredentials,
): Promise<boolean> {
  try {
    const res = await upstream.authenticate(credentials, 3_000);
    request.caller = {
      kind: 'authenticated',
      orgId: res.orgId,
      keyId: res.keyId,
      orgAssertion: res.orgAssertion,
    };
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
 * Authentication and the technical rate limit run in an onRequest hook, before the body is read, so
 * an unauthenticated or over-limit client never costs a 25 MiB parse. A malformed header is passed on
 * as an empty key so that admission's abuse guard counts it like any failed authentication.
 *
 * On a route marked `authWithAdmit` (POST /v1/scrub) a body declared at most AUTH_WITH_ADMIT_MAX_BYTES
 * is read first and the key travels with admission.Admit: one internal call instead of two on the
 * platform's hottest path. The check order does not change: a request refused by the gateway before
 * Admit (body, Idempotency-Key) is authenticated first by `authenticateBeforeRefusal`.
 */
export const authentication = fp(
  async (app: FastifyInstance, opts: { upstream: Pick<Upstream, 'authenticate'> }) => {
    app.decorateRequest('caller', null, []);
    app.addHook('onRequest', async (request, reply) => {
      request.caller = ANONYMOUS;
      const config = request.routeOptions.config;
      if (!config.auth) return;
      const credentials = presented(request);
      if (config.authWithAdmit && declaredSmall(request)) {
        request.caller = { kind: 'deferred', credentials };
        return;
      }
      await authenticateNow(opts.upstream, request, reply, credentials);
    });
  },
  { name: 'authentication' },
);

/**
 * Before the gateway refuses a request whose authentication was deferred to Admit, authenticate it: an
 * unknown key gets its 401 (and the abuse guard its count) ahead of a 400 or 413, and an accepted
 * one its rate-limit headers. False when the authentication failure was answered instead.
 */
export async function authenticateBeforeRefusal(
  upstream: Pick<Upstream, 'authenticate'>,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<boolean> {
  const caller = request.caller as Caller | null;
  if (caller?.kind !== 'deferred') return true;
  return authenticateNow(upstream, request, reply, caller.credentials);
}
