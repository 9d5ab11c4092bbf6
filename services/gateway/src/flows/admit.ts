import { findDetail, type PhoneSequence } from '@dnc/kit';
import { admissionv1 } from '@dnc/proto';
import type { ScrubCaller } from '../auth.js';
import type { Deadline } from '../deadline.js';
import { type CallFailure, callFailure, type FlowLog, type Upstream } from './port.js';
import { BodyPhones } from './scrub-body.js';

/** An abort gets at least this long, even when the budget is spent, and at most this long. */
const ABORT_MIN_MS = 250;
const ABORT_MAX_MS = 2_000;

/** The body of POST /v1/scrub and POST /v2/scrub, once validated against the contract's schema. */
export interface ScrubBody {
  country: string;
  phones: string[];
}

/** A scrub request as the flows see it: validated, its Idempotency-Key read, its caller known. */
export interface ScrubRequest {
  caller: ScrubCaller;
  idempotencyKey: string;
  country: string;
  /** As parsed, or read in place from the body's bytes (scrub-body.ts). */
  phones: readonly string[] | BodyPhones;
}

/** The keyed fingerprint of (country, phones in order): all admission learns of the phones. */
export type Fingerprinter = (country: string, phones: PhoneSequence, canonical?: Uint8Array) => string;

/** The fingerprint of a request: the current version, and during a rotation the previous one too. */
export interface Fingerprints {
  fingerprint: Fingerprinter;
  previousFingerprint?: Fingerprinter;
}

export interface FlowDeps<P extends Partial<Upstream>> extends Fingerprints {
  upstream: P;
  log: FlowLog;
}

/** Rate-limit figures for the reply, present when Admit authenticated the request. */
interface RateLimited {
  rateLimit: admissionv1.RateLimitInfo | undefined;
}

export type AdmitOutcome =
  | ({ outcome: 'admitted'; admission: admissionv1.AdmitResponse } & RateLimited)
  | (CallFailure & RateLimited);

/**
 * admission.Admit for a scrub, v1 or v2: the caller (authenticated, or its key when authentication
 * rides with Admit), the Idempotency-Key and the keyed fingerprint — nothing else of the request
 * leaves the gateway. When Admit authenticated, its rate-limit figures come back with the outcome,
 * from the answer or from the error.
 */
export async function admitScrub(
  deps: FlowDeps<Pick<Upstream, 'admit'>>,
  request: Omit<ScrubRequest, 'phones'> & { phones: PhoneSequence },
  kind: admissionv1.RequestKind,
  timeoutMs: number,
  /**
   * v2: the numbering rules its result estimate relies on (AdmitRequest.result_rules), and its durable
   * input, from which the fingerprint is computed without serializing the phones again.
   */
  v2: { resultRules: string; canonical: Uint8Array } | undefined = undefined,
): Promise<AdmitOutcome> {
  const { caller, country, phones } = request;
  const deferred = caller.kind === 'deferred';
  // The phones' JSON when it is at hand (v2's durable input, a body read on its bytes): hashed as is.
  const canonical = v2?.canonical ?? (phones instanceof BodyPhones ? phones.canonical : undefined);
  try {
    const admission = await deps.upstream.admit(
      {
        ...(deferred
          ? { credentials: caller.credentials }
          : { orgId: caller.orgId, keyId: caller.keyId, orgAssertion: caller.orgAssertion }),
        country,
        idempotencyKey: request.idempotencyKey,
        fingerprint: deps.fingerprint(country, phones, canonical),
        ...(deps.previousFingerprint
          ? { previousFingerprints: [deps.previousFingerprint(country, phones, canonical)] }
          : {}),
        inputCount: phones.length,
        kind,
        ...(v2?.resultRules ? { resultRules: v2.resultRules } : {}),
      },
      timeoutMs,
    );
    return { outcome: 'admitted', admission, rateLimit: deferred ? admission.rateLimit : undefined };
  } catch (error) {
    return {
      ...callFailure(error),
      rateLimit: deferred ? findDetail(error, admissionv1.RateLimitInfoSchema) : undefined,
    };
  }
}

/** The first pause between the tries of an abort that must settle, doubled each time up to the last. */
const SETTLE_FIRST_PAUSE_MS = 100;
const SETTLE_MAX_PAUSE_MS = 1_000;

/**
 * Undo an admission (reservation released, idempotency claim dropped) after a later step failed:
 * `completed` when admission found it completed after all (its reservation committed; nothing undone). A
 * failed or unanswered abort is left to admission's own bounds (it runs on there when its caller stops
 * waiting) and to its claim reconciler.
 *
 * `settle`: the abort is tried again while its outcome is unknown (admission unreachable, its answer
 * lost) and the request's budget allows, with pauses doubling from SETTLE_FIRST_PAUSE_MS (jittered).
 * For a v1 Complete whose outcome is unknown: the request may be charged, and only admission can say so.
 * Found by a review of v1 under faults (2026-12-04): the only admission replica killed after quota's
 * commit and before its answer left one try of the abort, refused by the dead replica, and the request
 * was answered 503 and charged; a restarted (or another) replica answers the abort in time.
 */
export async function abortAdmission(
  deps: FlowDeps<Pick<Upstream, 'abort'>>,
  admissionId: string,
  deadline: Deadline,
  failedMessage: string,
  settle = false,
): Promise<'aborted' | 'completed' | 'not_aborted'> {
  for (let pauseMs = SETTLE_FIRST_PAUSE_MS; ; pauseMs = Math.min(2 * pauseMs, SETTLE_MAX_PAUSE_MS)) {
    // Waited for within the request's budget (at least ABORT_MIN_MS, at most ABORT_MAX_MS): an abort that
    // takes longer runs on in admission, which the caller's giving up does not stop.
    const timeoutMs = Math.min(ABORT_MAX_MS, Math.max(deadline.remaining(), ABORT_MIN_MS));
    try {
      return (await deps.upstream.abort(admissionId, timeoutMs)).completed ? 'completed' : 'aborted';
    } catch (error) {
      const pause = pauseMs * (0.5 + Math.random() / 2);
      if (
        !settle ||
        callFailure(error).outcome !== 'unknown' ||
        deadline.remaining() < pause + ABORT_MIN_MS
      ) {
        deps.log.warn(failedMessage);
        return 'not_aborted';
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}
