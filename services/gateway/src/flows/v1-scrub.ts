import { timestampDate } from '@bufbuild/protobuf/wkt';
import { buildScrubResult, renderScrubResult, summarizeOutcomes } from '@dnc/kit';
import { admissionv1 } from '@dnc/proto';
import type { Deadline } from '../deadline.js';
import { fromRpcError, type MappedError, toHttp } from '../errors.js';
import { abortAdmission, admitScrub, type FlowDeps, type ScrubRequest } from './admit.js';
import type { EarlyChecks } from './early-check.js';
import { type CallFailure, callFailure, type Upstream } from './port.js';
import { BodyPhones } from './scrub-body.js';

/** Admit may take at most this much of the 15-second budget. */
const ADMIT_MAX_MS = 5_000;
/** Time kept back from the adapter's share of the budget for Complete (quota commit + usage record). */
const COMPLETE_RESERVE_MS = 1_000;
/** What Complete is given, budget allowing, before any time is kept for settling (its reserve). */
const COMPLETE_FLOOR_MS = COMPLETE_RESERVE_MS;
/** Complete gets at least this long, even when the budget is nearly spent. */
const COMPLETE_MIN_MS = 250;
/**
 * Kept from Complete's time for the aborts that learn how a Complete left unanswered ended (committed:
 * answered with the result; not: released). Found by a review (2026-12-05): Complete took the whole
 * remaining budget, so a Complete delayed on its way (a stalled link, a frozen admission replica) whose
 * commit landed late left one abort try, often refused, and a charged request was answered 503.
 */
const SETTLE_RESERVE_MS = 400;

export type V1Upstream = Pick<Upstream, 'admit' | 'check' | 'complete' | 'abort'>;

/** What a v1 request needs: the upstream calls, and (optionally) the early Check policy. */
export type V1Deps = FlowDeps<V1Upstream> & { early?: EarlyChecks };

export type V1Outcome = (
  | {
      ok: true;
      /** The ScrubResult as JSON, in UTF-8: the bytes the reply writes as they are. */
      body: Buffer;
      replayed: boolean;
      /** When the registry snapshot the answer was read from was taken (X-Registry-Snapshot-At). */
      snapshotAt: Date | undefined;
    }
  | { ok: false; error: MappedError }
) & { rateLimit: admissionv1.RateLimitInfo | undefined };

type CheckOutcome =
  | {
      outcome: 'checked';
      /** The ScrubResult's JSON in UTF-8, made when asked for: the answer is checked complete already. */
      render: () => Buffer;
      snapshotAt: Date | undefined;
    }
  | { outcome: 'failed'; error: MappedError };
type CompleteOutcome = { outcome: 'completed' } | CallFailure;

/**
 * POST /v1/scrub: admission.Admit -> adapter.Check -> admission.Complete, inside one deadline (15 s).
 * For a key admitted a moment ago, to a country whose adapter's lookups are free (a local registry copy),
 * the Check is sent beside Admit and its answer read only once Admit admitted the request
 * (early-check.ts); otherwise, or when that early Check failed, after Admit.
 * Any failure after admission aborts it (reservation released, idempotency claim removed) and answers
 * the public error only: never a partial result, never a charge. An exact retry of a completed request
 * is recalculated and not completed again (nothing reserved, nothing to undo).
 *
 * The outcome of every step is explicit, and each failure point has its compensation below it:
 *   Admit     admitted | refused | unknown   nothing known to undo (no admission id)
 *   Check     checked | failed               abort
 *   Complete  completed | refused | unknown  abort; when the commit was done after all (unknown, or
 *                                            committed but not marked), admission's abort marks the
 *                                            request completed instead and says so: the result is
 *                                            answered, charged once (a retry replays free); asked
 *                                            again while unanswered, within the budget
 */
export async function scrubV1(deps: V1Deps, request: ScrubRequest, deadline: Deadline): Promise<V1Outcome> {
  const early = earlyCheck(deps, request, deadline);
  const admitted = await admitScrub(
    deps,
    request,
    admissionv1.RequestKind.SYNC,
    deadline.remaining(ADMIT_MAX_MS),
  );
  const { rateLimit } = admitted;
  if (admitted.outcome !== 'admitted') {
    deps.early?.refused(request);
    // Dropped unread: nothing of it leaves the gateway.
    if (early) void early.then(() => deps.early?.count('dropped'));
    return { ok: false, error: fromRpcError(admitted.error), rateLimit };
  }
  const { admission } = admitted;
  deps.early?.admitted(request, admission.adapterAddress, admission.adapterLookupsFree);
  const abort = async (settle = false) =>
    admission.replay
      ? 'aborted'
      : abortAdmission(
          deps,
          admission.admissionId,
          deadline,
          'abort of a failed v1 admission did not complete',
          settle,
        );

  const checked =
    (await earlyAnswer(deps, early)) ??
    (await checkPhones(deps.upstream, admission.adapterAddress, request, deadline));
  if (checked.outcome === 'failed') {
    await abort();
    return { ok: false, error: checked.error, rateLimit };
  }
  const { render, snapshotAt } = checked;
  if (admission.replay) return { ok: true, body: render(), replayed: true, snapshotAt, rateLimit };

  // The result is serialized (and encoded) while Complete is on the wire; it is answered only once
  // completed.
  const completing = complete(deps.upstream, admission.admissionId, deadline);
  const body = render();
  const completed = await completing;
  switch (completed.outcome) {
    case 'completed':
      return { ok: true, body, replayed: false, snapshotAt, rateLimit };
    case 'refused':
    case 'unknown':
      // Committed after all (the answer of Complete was lost): the request is charged once and answered,
      // never charged for an error (spec: a platform failure consumes no customer quota). The abort is
      // asked until admission answers it, within the budget: only its answer says which it was.
      if ((await abort(true)) === 'completed')
        return { ok: true, body, replayed: false, snapshotAt, rateLimit };
      return { ok: false, error: fromRpcError(completed.error), rateLimit };
  }
}

/**
 * How the result's JSON is made, as UTF-8 bytes, once the answer is known complete (an incomplete one
 * throws here: the country's failure). Made by the flow, beside Complete, instead of by the reply: a
 * string body costs the reply a `Buffer.byteLength` for Content-Length and a UTF-8 encoding on the way
 * out, both after Complete answered (~190 KB for 10,000 inputs). A body read on its bytes is rendered
 * from them (no string per phone, no `JSON.stringify` of 10,000 of them); the text is the same.
 */
function resultOf(phones: readonly string[] | BodyPhones, outcomes: ArrayLike<number>): () => Buffer {
  if (phones instanceof BodyPhones) {
    const summary = summarizeOutcomes(outcomes, phones.length);
    return () => renderScrubResult(phones.runs, outcomes, summary);
  }
  const result = buildScrubResult(phones, outcomes);
  return () => Buffer.from(JSON.stringify(result), 'utf8');
}

/** The request's Check sent now, to the adapter admission chose for this key's last request. */
function earlyCheck(
  deps: V1Deps,
  request: ScrubRequest,
  deadline: Deadline,
): Promise<CheckOutcome> | undefined {
  const slot = deps.early?.begin(request);
  if (!slot) return undefined;
  return checkPhones(deps.upstream, slot.address, request, deadline).finally(slot.release);
}

/** The early Check's outcome when it succeeded; a failed one is counted and checked again. */
async function earlyAnswer(
  deps: V1Deps,
  early: Promise<CheckOutcome> | undefined,
): Promise<CheckOutcome | undefined> {
  if (!early) return undefined;
  const outcome = await early;
  deps.early?.count(outcome.outcome === 'checked' ? 'used' : 'failed');
  return outcome.outcome === 'checked' ? outcome : undefined;
}

/**
 * The adapter's outcomes turned into the result. Any failure is the country's: its own public reason
 * when it gave one (maintenance), otherwise temporarily unavailable — an unreachable, slow or
 * inconclusive adapter (an answer that does not cover every input) is a country failure.
 */
async function checkPhones(
  upstream: Pick<Upstream, 'check'>,
  adapterAddress: string,
  request: ScrubRequest,
  deadline: Deadline,
): Promise<CheckOutcome> {
  try {
    if (!adapterAddress) throw new Error('no adapter address');
    const answer = await upstream.check(
      adapterAddress,
      request.country,
      request.phones,
      deadline.remaining() - COMPLETE_RESERVE_MS,
    );
    return {
      outcome: 'checked',
      render: resultOf(request.phones, answer.outcomes),
      snapshotAt: answer.snapshotTime ? timestampDate(answer.snapshotTime) : undefined,
    };
  } catch (error) {
    return {
      outcome: 'failed',
      error: deadline.expired()
        ? toHttp('country_service_temporarily_unavailable', undefined, 1)
        : fromRpcError(error, 'country_service_temporarily_unavailable', { unexpectedIsInternal: false }),
    };
  }
}

async function complete(
  upstream: Pick<Upstream, 'complete'>,
  admissionId: string,
  deadline: Deadline,
): Promise<CompleteOutcome> {
  try {
    // Settling gets what is left beyond Complete's floor, at most SETTLE_RESERVE_MS: a Complete is never
    // given less than before (admission refuses one with less than its COMMIT_MIN_MS left).
    const remaining = deadline.remaining();
    const completeMs = Math.max(remaining - SETTLE_RESERVE_MS, Math.min(remaining, COMPLETE_FLOOR_MS));
    await upstream.complete(admissionId, Math.max(completeMs, COMPLETE_MIN_MS));
    return { outcome: 'completed' };
  } catch (error) {
    return callFailure(error);
  }
}
