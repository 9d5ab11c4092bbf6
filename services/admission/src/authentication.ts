import { create } from '@bufbuild/protobuf';
import { Code, publicError } from '@dnc/kit';
import { admissionv1 } from '@dnc/proto';
import { digestMatches, parseApiKey } from './domain/api-key.js';
import { type RateDecision, secondsToReset } from './domain/rate-window.js';
import type { RequestLimiter } from './limiter.js';
import type { Refusals } from './public-errors.js';
import type { KeyCredential } from './store/index.js';

export interface AuthenticationDeps {
  limiter: RequestLimiter;
  refusals: Refusals;
  defaultRateLimit: number;
  /** Notes each key that authenticates a request (its last use, shown in the dashboard). */
  keyUsage?: { note(keyId: string): void };
}

/** An authenticated key: what its lookup found, and the rate-limit figures of this request. */
export interface Authenticated<T> {
  found: T;
  rate: RateDecision;
}

/** The rate-limit figures of a request as they ride on an answer or an error (a typed detail). */
export function rateInfo(rate: RateDecision) {
  return {
    desc: admissionv1.RateLimitInfoSchema,
    value: create(admissionv1.RateLimitInfoSchema, {
      limit: rate.limit,
      remaining: rate.remaining,
      resetUnix: BigInt(rate.resetUnix),
    }),
  };
}

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** A promise that never rejects (no unhandled rejection while it waits unread), and its outcome again. */
const settled = <T>(p: Promise<T>): Promise<Settled<T>> =>
  p.then(
    (value) => ({ ok: true, value }),
    (error: unknown) => ({ ok: false, error }),
  );
async function unsettled<T>(p: Promise<Settled<T>>): Promise<T> {
  const r = await p;
  if (r.ok) return r.value;
  throw r.error;
}

/**
 * Steps 0-3 of CHECK_ORDER (domain/check-order.ts) for a presented key: address block, the key,
 * the organization's abuse guard, the rate limit. Run by Authenticate, and by Admit when the key rides
 * with it. `lookup` reads the key's credential by public id (with whatever else the caller needs from
 * the same query: Admit reads the gate facts of steps 5-7 with it).
 */
export async function authenticateKey<T extends { credential: KeyCredential }>(
  deps: AuthenticationDeps,
  apiKey: string,
  clientAddress: string,
  lookup: (publicId: string) => Promise<T | undefined>,
): Promise<Authenticated<T>> {
  const { limiter, refusals } = deps;
  const parsed = parseApiKey(apiKey);
  // 0 and 1 go out together (issue 18: one round trip fewer on every request): the key's lookup beside
  // the address block's. A blocked address still cannot probe keys — its answer is temporarily_blocked
  // whatever the key, and the lookup's result (or failure) is dropped unread — and an address this
  // process saw blocked lately is checked alone first, so one flooding while blocked costs no lookups.
  const looking =
    parsed && !limiter.seenBlocked(clientAddress) ? settled(lookup(parsed.publicId)) : undefined;
  // 0. address block
  const blockedFor = await limiter.addressBlockedSeconds(clientAddress);
  if (blockedFor > 0) {
    throw refusals.reject(
      publicError(Code.ResourceExhausted, 'temporarily_blocked', {
        message: 'Too many failed authentications from this address; wait before retrying.',
        retryAfterSeconds: blockedFor,
      }),
    );
  }
  // 1. authentication
  const found = parsed ? await (looking ? unsettled(looking) : lookup(parsed.publicId)) : undefined;
  const credential = found?.credential;
  const matches = parsed ? digestMatches(parsed.digest, credential?.digest) : false;
  if (!parsed || !found || !credential || !matches || credential.revoked) {
    await limiter.recordAuthFailure(clientAddress);
    throw refusals.reject(publicError(Code.Unauthenticated, 'invalid_key'));
  }
  deps.keyUsage?.note(credential.keyId);
  // 2. abuse guard and 3. rate limit, in one count.
  const verdict = await limiter.countRequest(credential.orgId, credential.rateLimit ?? deps.defaultRateLimit);
  if (verdict.kind === 'blocked') {
    throw refusals.reject(
      publicError(Code.ResourceExhausted, 'temporarily_blocked', {
        message: 'Requests far past the rate limit; this account is blocked for a while.',
        retryAfterSeconds: verdict.retryAfterSeconds,
        details: [rateInfo(verdict.rate)],
      }),
    );
  }
  if (verdict.kind === 'limited') {
    throw refusals.reject(
      publicError(Code.ResourceExhausted, 'rate_limit_exceeded', {
        message: 'Rate limit exceeded; retry after the window resets.',
        retryAfterSeconds: secondsToReset(Date.now(), verdict.rate.resetUnix),
        details: [rateInfo(verdict.rate)],
      }),
    );
  }
  return { found, rate: verdict.rate };
}
