import type { ErrorCode } from '@dnc/api-contract/error-codes';
import { type CountryCode, isLiveCountry } from '@dnc/api-contract/limits';
import { Code } from '@dnc/kit';

/**
 * THE check order of admission, one list for the whole platform. Each request passes these in order
 * and is rejected by the first that fails. The right column is where each step runs:
 *
 *   0. address block        429 temporarily_blocked   authentication.ts authenticateKey (answered
 *                                                       whatever the key, so a blocked address cannot
 *                                                       probe keys; the lookup goes out beside it, none
 *                                                       for an address seen blocked)
 *   1. authentication       401 invalid_key            authentication.ts authenticateKey
 *   2. abuse guard (org)    429 temporarily_blocked   authentication.ts authenticateKey (limiter.ts)
 *   3. rate limit           429 rate_limit_exceeded   authentication.ts authenticateKey (limiter.ts)
 *   4. body and key         400 / 413                 the gateway (schema validation, Idempotency-Key,
 *                                                       the v2 sizes in flows/v2-submit.ts); for a v2
 *                                                       result bound that needs the adapters' numbering
 *                                                       rules, admit.ts checkResultRules
 *   5. organization         403 account_suspended, activation_incomplete      admit.ts -> admissionGate
 *   6. purchase             403 country_not_in_plan, 402 subscription_inactive admit.ts -> admissionGate
 *   7. activation and       503 country_service_temporarily_unavailable,      admit.ts -> admissionGate
 *      availability             country_service_maintenance (Retry-After)
 *   8. idempotency          409 idempotency_request_in_progress / _key_reused admit.ts claimKey ->
 *                                                                              decideIdempotency
 *   9. quota                429 customer_quota_exceeded                        admit.ts reserveQuota ->
 *                                                                              reservations.ts (ReserveMany)
 *
 * Steps 1-3 run for every authenticated request (scrub, job status, result, cancel: RPC Authenticate);
 * every answer after step 1 carries the rate-limit figures. For a small v1 body the gateway sends the
 * key with Admit instead (one call fewer): steps 0-3 then run at the start of Admit (routes.ts), and a
 * request the gateway refuses at step 4 is authenticated before the refusal, so the order above holds
 * either way. One exception to "the first that fails": a request refused at steps 4-7 whose key is
 * already taken gets what step 8 says of the key (admit.ts replayPastGate; spec, Idempotency 5-8): the
 * same key with another country or other phones 409 idempotency_key_reused, an original still running
 * 409 in progress, an exact retry of one admitted its replay (a v2 one its job; a v1 one, recalculated,
 * unless the refusal is the country's unavailability).
 * What is batched (key lookups, claims, reservations, completions) is batched below these
 * steps, in the store and reservations modules: each request still passes them one by one.
 */
export const CHECK_ORDER = [
  'address_block',
  'authentication',
  'abuse_guard',
  'rate_limit',
  'request_validation',
  'organization',
  'purchase',
  'availability',
  'idempotency',
  'quota',
] as const;
export type CheckStep = (typeof CHECK_ORDER)[number];

export interface Rejection {
  step: CheckStep;
  code: Code;
  reason: ErrorCode;
  message: string;
  retryAfterSeconds?: number;
}

export interface OrganizationFacts {
  suspended: boolean;
  activationComplete: boolean;
}

export type PurchaseState = 'pending_payment' | 'active' | 'lapsed';

export interface PurchaseFacts {
  status: PurchaseState;
  activated: boolean;
}

/** One adapter instance as discovery shows it (fresh entries only). */
export interface AdapterFacts {
  status: 'serving' | 'maintenance' | 'unavailable';
  maintenanceUntilMs?: number;
}

export interface GateFacts {
  country: CountryCode;
  organization: OrganizationFacts | undefined;
  /** The organization's purchase of the country (the open one, else the latest lapsed). */
  purchase: PurchaseFacts | undefined;
  /** Operator maintenance window of the country, when one is set. */
  maintenanceUntilMs: number | undefined;
  adapters: AdapterFacts[];
  nowMs: number;
}

function secondsUntil(untilMs: number, nowMs: number): number {
  return Math.max(1, Math.ceil((untilMs - nowMs) / 1000));
}

/**
 * Steps 5-7 of CHECK_ORDER as one pure function: facts in, the first rejection out (or none).
 * Steps 8-9 follow in Admit because they change state (a claim, a reservation).
 */
export function admissionGate(f: GateFacts): Rejection | undefined {
  // 5. organization
  if (!f.organization || f.organization.suspended) {
    return {
      step: 'organization',
      code: Code.PermissionDenied,
      reason: 'account_suspended',
      message: 'This account is suspended; contact support.',
    };
  }
  if (!f.organization.activationComplete) {
    return {
      step: 'organization',
      code: Code.PermissionDenied,
      reason: 'activation_incomplete',
      message: 'Complete the account activation before sending requests.',
    };
  }
  // 6. purchase
  if (!isLiveCountry(f.country) || !f.purchase) {
    return {
      step: 'purchase',
      code: Code.PermissionDenied,
      reason: 'country_not_in_plan',
      message: 'Your plan does not include this country.',
    };
  }
  if (f.purchase.status !== 'active') {
    return {
      step: 'purchase',
      code: Code.FailedPrecondition,
      reason: 'subscription_inactive',
      message:
        f.purchase.status === 'pending_payment'
          ? 'The subscription for this country awaits its initial payment.'
          : 'The subscription for this country is inactive; renew it to continue.',
    };
  }
  // 7. activation, then operational availability
  if (!f.purchase.activated) {
    return {
      step: 'availability',
      code: Code.Unavailable,
      reason: 'country_service_temporarily_unavailable',
      message: 'The country service is being activated for your account; retry later.',
    };
  }
  if (f.maintenanceUntilMs !== undefined && f.maintenanceUntilMs > f.nowMs) {
    return {
      step: 'availability',
      code: Code.Unavailable,
      reason: 'country_service_maintenance',
      message: 'The country service is in a maintenance window.',
      retryAfterSeconds: secondsUntil(f.maintenanceUntilMs, f.nowMs),
    };
  }
  if (f.adapters.some((a) => a.status === 'serving')) return undefined;
  const inMaintenance = f.adapters.filter((a) => a.status === 'maintenance');
  if (inMaintenance.length > 0) {
    const ends = inMaintenance
      .map((a) => a.maintenanceUntilMs)
      .filter((t): t is number => t !== undefined && t > f.nowMs);
    return {
      step: 'availability',
      code: Code.Unavailable,
      reason: 'country_service_maintenance',
      message: 'The country service is in a maintenance window.',
      ...(ends.length > 0 ? { retryAfterSeconds: secondsUntil(Math.min(...ends), f.nowMs) } : {}),
    };
  }
  return {
    step: 'availability',
    code: Code.Unavailable,
    reason: 'country_service_temporarily_unavailable',
    message: 'The country service is temporarily unavailable; retry later.',
    retryAfterSeconds: 5,
  };
}
