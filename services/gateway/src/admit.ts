import { findDetail } from '@dnc/kit';
import { admissionv1 } from '@dnc/proto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { setRateLimitHeaders } from './auth.js';
import type { Upstreams } from './clients.js';
import type { GatewayConfig } from './config.js';
import { fingerprint } from './fingerprint.js';

/** The body of POST /v1/scrub and POST /v2/scrub, once validated against the contract's schema. */
export interface ScrubBody {
  country: string;
  phones: string[];
}

/**
 * admission.Admit for a scrub, v1 or v2: the caller (authenticated, or its key when authentication
 * rides with Admit), its Idempotency-Key and the keyed fingerprint of (country, phones in order) —
 * nothing else of the request leaves the gateway. When Admit authenticated, its rate-limit figures go
 * on the reply, from the answer or from the error.
 */
export async function admitScrub(
  config: GatewayConfig,
  upstreams: Upstreams,
  request: FastifyRequest,
  reply: FastifyReply,
  idempotencyKey: string,
  body: ScrubBody,
  kind: admissionv1.RequestKind,
  timeoutMs: number,
): Promise<admissionv1.AdmitResponse> {
  const caller = request.auth
    ? { orgId: request.auth.orgId, keyId: request.auth.keyId }
    : { credentials: request.credentials };
  if (request.auth) return admit();
  try {
    const admitted = await admit();
    setRateLimitHeaders(reply, admitted.rateLimit);
    return admitted;
  } catch (error) {
    setRateLimitHeaders(reply, findDetail(error, admissionv1.RateLimitInfoSchema));
    throw error;
  } finally {
    // Admit authenticated the request (or refused it): a later error must not authenticate it again.
    delete request.credentials;
  }

  function admit() {
    return upstreams.batched.admit(
      {
        ...caller,
        country: body.country,
        idempotencyKey,
        fingerprint: fingerprint(
          config.DNC_FINGERPRINT_SECRET,
          config.DNC_FINGERPRINT_VERSION,
          body.country,
          body.phones,
        ),
        inputCount: body.phones.length,
        kind,
      },
      timeoutMs,
    );
  }
}
