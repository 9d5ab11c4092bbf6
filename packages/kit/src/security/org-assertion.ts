import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { methodName } from './authorization.js';
import type { Identity } from './identity.js';
import type { Security } from './security.js';
import { canonicalBytes, SignatureVerifier } from './signatures.js';
import { CALLER } from './transport.js';

/**
 * Organization assertions (issue 13): admission, which authenticates API keys, signs a short-lived
 * statement "this caller acts for organization X" with its certificate key, and the services that act
 * for an organization (the job scheduler's JobsService) act only when the organization a request names
 * is the one admission asserted. A compromised gateway can then act only for the organizations whose
 * keys it sees, not for any organization it names.
 *
 * The token: `<payload>.<signature>.<certificate>`, each base64url. The payload is the canonical JSON
 * of the claims; the signature, by admission's certificate key, covers a domain prefix and the payload
 * bytes as sent; the certificate (chain) travels with it and must chain to the platform CA and name
 * `admission` (the same mechanism as signed discovery entries, `signatures.ts`).
 */
export const ORG_ASSERTION_HEADER = 'dnc-org-assertion';

/** How long an assertion is valid. An answer to Authenticate carries one valid at least half of it. */
export const ORG_ASSERTION_TTL_MS = 120_000;
/** Clock difference tolerated between the issuer and a verifier (iat in the future). */
const CLOCK_SKEW_MS = 30_000;
const DOMAIN = Buffer.from('dnc-org-assertion/v1\n', 'utf8');
const ISSUER: Identity = 'admission';
const CACHE_MAX = 10_000;

export interface OrgAssertionClaims {
  v: 1;
  /** The organization admission authenticated. */
  org: string;
  /**
   * The API key it authenticated (its id): Admit acts for that key only (its Idempotency-Key claims are
   * the key's). Absent in the assertions of admissions before it was added (accepted: none is issued any
   * more, and one lives 2 minutes).
   */
  key?: string;
  /** The identity it was issued to (the caller of Authenticate): only that identity may present it. */
  sub: string;
  /** The services it is meant for (admission's Admit, the job scheduler's JobsService). */
  aud: string[];
  /** Issued at and expiry, Unix milliseconds. */
  iat: number;
  exp: number;
}

export type OrgAssertionRefusal =
  | 'missing'
  | 'malformed'
  | 'bad_signature'
  | 'wrong_signer'
  | 'expired'
  | 'not_yet_valid'
  | 'wrong_audience'
  | 'wrong_holder'
  | 'wrong_organization'
  | 'wrong_key';

export type OrgAssertionCheck = { ok: true } | { ok: false; reason: OrgAssertionRefusal };

const b64 = (b: Buffer) => b.toString('base64url');

/** Encode claims signed by `sign` (a workload's certificate key). Exposed for tests that forge tokens. */
export function encodeOrgAssertion(
  claims: OrgAssertionClaims,
  sign: (data: Buffer) => { signature: Buffer; certPem: string },
): string {
  const payload = canonicalBytes(claims as unknown as Record<string, unknown>);
  const { signature, certPem } = sign(Buffer.concat([DOMAIN, payload]));
  return `${b64(payload)}.${b64(signature)}.${b64(Buffer.from(certPem, 'utf8'))}`;
}

/**
 * Admission's side: one assertion per (organization, key, holder, audience), re-used while it has at
 * least half its life left, so signing costs one ECDSA signature per API key a minute, not one per
 * request. In plaintext mode (development only) there is no key and no assertion ('').
 */
export class OrgAssertionIssuer {
  private readonly issued = new Map<string, { token: string; exp: number }>();

  constructor(
    private readonly security: Security,
    private readonly ttlMs = ORG_ASSERTION_TTL_MS,
  ) {}

  /** An assertion that `holder` acts for `org`, for `audiences`; bound to API key `apiKeyId` when given. */
  issue(
    org: string,
    holder: string,
    audiences: readonly string[],
    now = Date.now(),
    apiKeyId?: string,
  ): string {
    const security = this.security;
    if (security.mode !== 'mtls') return '';
    const cacheKey = `${org}\u0000${apiKeyId ?? ''}\u0000${holder}\u0000${audiences.join(' ')}`;
    const cached = this.issued.get(cacheKey);
    if (cached && cached.exp - now >= this.ttlMs / 2) return cached.token;
    const exp = now + this.ttlMs;
    const claims: OrgAssertionClaims = { v: 1, org, sub: holder, aud: [...audiences], iat: now, exp };
    if (apiKeyId !== undefined) claims.key = apiKeyId;
    const token = encodeOrgAssertion(claims, (data) => security.material.sign(data));
    if (this.issued.size >= CACHE_MAX) this.issued.clear();
    this.issued.set(cacheKey, { token, exp });
    return token;
  }
}

/**
 * A verifier's side. A token whose signature and certificate verified is remembered until it expires
 * (bounded), so the steady cost of a repeated token is a map lookup; the claims are checked against
 * the request on every call.
 */
export class OrgAssertionVerifier {
  private readonly signatures: SignatureVerifier | undefined;
  private readonly verified = new Map<string, OrgAssertionClaims>();

  constructor(
    private readonly security: Security,
    private readonly audience: string,
  ) {
    const s = security;
    this.signatures =
      s.mode === 'mtls'
        ? new SignatureVerifier(() => ({ anchors: s.material.anchors, trustDomain: s.trustDomain }))
        : undefined;
  }

  /**
   * Whether `token`, presented by `caller`, lets it act for `org` now, and for API key `apiKeyId` when
   * the request names one (Admit). Plaintext mode: always.
   */
  check(
    token: string | undefined,
    caller: string | undefined,
    org: string,
    now = Date.now(),
    apiKeyId?: string,
  ): OrgAssertionCheck {
    if (this.security.mode !== 'mtls') return { ok: true };
    if (!token) return { ok: false, reason: 'missing' };
    let claims = this.verified.get(token);
    if (!claims) {
      const decoded = this.verify(token, now);
      if ('reason' in decoded) return { ok: false, reason: decoded.reason };
      claims = decoded.claims;
      if (this.verified.size >= CACHE_MAX) this.prune(now);
      this.verified.set(token, claims);
    }
    if (now >= claims.exp) {
      this.verified.delete(token);
      return { ok: false, reason: 'expired' };
    }
    if (claims.iat > now + CLOCK_SKEW_MS) return { ok: false, reason: 'not_yet_valid' };
    if (!claims.aud.includes(this.audience)) return { ok: false, reason: 'wrong_audience' };
    if (claims.sub !== caller) return { ok: false, reason: 'wrong_holder' };
    if (claims.org !== org) return { ok: false, reason: 'wrong_organization' };
    if (apiKeyId !== undefined && claims.key !== undefined && claims.key !== apiKeyId)
      return { ok: false, reason: 'wrong_key' };
    return { ok: true };
  }

  private verify(
    token: string,
    now: number,
  ): { claims: OrgAssertionClaims } | { reason: 'malformed' | 'bad_signature' | 'wrong_signer' } {
    const parts = token.split('.');
    if (parts.length !== 3 || token.length > 16_384) return { reason: 'malformed' };
    const [p, s, c] = parts as [string, string, string];
    const payload = Buffer.from(p, 'base64url');
    let claims: OrgAssertionClaims;
    try {
      claims = JSON.parse(payload.toString('utf8')) as OrgAssertionClaims;
    } catch {
      return { reason: 'malformed' };
    }
    if (
      claims?.v !== 1 ||
      typeof claims.org !== 'string' ||
      typeof claims.sub !== 'string' ||
      (claims.key !== undefined && typeof claims.key !== 'string') ||
      !Array.isArray(claims.aud) ||
      !claims.aud.every((a) => typeof a === 'string') ||
      !Number.isSafeInteger(claims.iat) ||
      !Number.isSafeInteger(claims.exp)
    )
      return { reason: 'malformed' };
    const signer = this.signatures!.signer(
      Buffer.from(c, 'base64url').toString('utf8'),
      Buffer.concat([DOMAIN, payload]),
      Buffer.from(s, 'base64url'),
      now,
    );
    if (!signer) return { reason: 'bad_signature' };
    if (signer !== ISSUER) return { reason: 'wrong_signer' };
    return { claims };
  }

  private prune(now: number): void {
    for (const [token, claims] of this.verified) if (claims.exp <= now) this.verified.delete(token);
    if (this.verified.size >= CACHE_MAX) this.verified.clear();
  }
}

/**
 * The server side: on `methods`, a request acts for the organization its `orgId` names only with an
 * assertion of that organization, issued to the caller, for this service. Anything else is
 * PERMISSION_DENIED before any handler runs, counted in `refused{caller,method,reason}` and logged
 * with the caller, the method and the reason (never the token or the organization).
 */
export function orgAssertionInterceptor(opts: {
  verifier: OrgAssertionVerifier;
  methods: readonly string[];
  logger: Logger;
  refused: Counter<'caller' | 'method' | 'reason'>;
}): Interceptor {
  const methods = new Set(opts.methods);
  return (next) => async (req) => {
    const method = methodName(req.service, req.method);
    if (!methods.has(method)) return next(req);
    const caller = req.contextValues.get(CALLER);
    const token = req.header.get(ORG_ASSERTION_HEADER) ?? undefined;
    const refuse = (reason: OrgAssertionRefusal) => {
      opts.refused.inc({ caller: caller ?? 'unauthenticated', method, reason });
      opts.logger.warn({ caller, method, reason }, 'rpc refused: no valid organization assertion');
      return new ConnectError(
        `${caller ?? 'caller'} has no valid organization assertion for this request (${reason})`,
        Code.PermissionDenied,
      );
    };
    const checkOrg = (message: unknown) => {
      const org = (message as { orgId?: unknown }).orgId;
      const result = opts.verifier.check(token, caller, typeof org === 'string' ? org : '');
      if (!result.ok) throw refuse(result.reason);
    };
    if (!req.stream) {
      checkOrg(req.message);
      return next(req);
    }
    // A streamed request (GetJobResult is server-streaming): every message is checked as it is read,
    // before the handler sees it.
    const source = req.message;
    return next({
      ...req,
      message: (async function* () {
        for await (const m of source) {
          checkOrg(m);
          yield m;
        }
      })(),
    });
  };
}

/** `dnc_org_assertion_refused_total{caller,method,reason}`: requests refused for want of a valid assertion. */
export function orgAssertionRefusals(registry: Registry): Counter<'caller' | 'method' | 'reason'> {
  return new Counter({
    name: 'dnc_org_assertion_refused_total',
    help: 'Requests refused with PERMISSION_DENIED: no valid organization assertion by admission for the organization they name.',
    labelNames: ['caller', 'method', 'reason'],
    registers: [registry],
  });
}
