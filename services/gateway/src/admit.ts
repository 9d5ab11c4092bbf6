import type { admissionv1 } from '@dnc/proto';
import type { FastifyRequest } from 'fastify';
import type { Upstreams } from './clients.js';
import type { GatewayConfig } from './config.js';
import { fingerprint } from './fingerprint.js';

/** The body of POST /v1/scrub and POST /v2/scrub, once validated against the contract's schema. */
export interface ScrubBody {
  country: string;
  phones: string[];
}

/**
 * admission.Admit for a scrub, v1 or v2: the authenticated caller, its Idempotency-Key and the keyed
 * fingerprint of (country, phones in order) — nothing else of the request leaves the gateway.
 */
export function admitScrub(
  config: GatewayConfig,
  upstreams: Upstreams,
  request: FastifyRequest,
  idempotencyKey: string,
  body: ScrubBody,
  kind: admissionv1.RequestKind,
  timeoutMs: number,
): Promise<admissionv1.AdmitResponse> {
  const auth = request.auth!;
  return upstreams.admission.admit(
    {
      orgId: auth.orgId,
      keyId: auth.keyId,
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
    { timeoutMs },
  );
}
