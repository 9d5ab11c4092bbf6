import { JOB_ID_REGEXP, LIMITS } from '@dnc/api-contract';
import { RESULT_TOO_LARGE_MESSAGE, readPublicReason } from '@dnc/kit';
import { admissionv1, type jobsv1 } from '@dnc/proto';
import type { AuthenticatedCaller } from '../auth.js';
import type { Deadline } from '../deadline.js';
import { fromRpcError, type MappedError, toHttp } from '../errors.js';
import { abortAdmission, admitScrub, type FlowDeps, type ScrubRequest } from './admit.js';
import { type CallFailure, callFailure, type Upstream } from './port.js';
import { type DurableSizes, durableInput } from './result-estimate.js';
import type { BodyPhones } from './scrub-body.js';

/** The least admission budget a v2 request must have left once its body has arrived for any call to go out. */
const ADMISSION_MIN_MS = 500;
const NO_TIME_LEFT =
  'Too little of the admission budget was left once the request body had arrived; send it again with the same Idempotency-Key.';
const STOPPING =
  'The server instance that received the request is shutting down; send it again with the same Idempotency-Key.';
/** ConfirmJob gets at least this long, even when the budget is nearly spent. */
const CONFIRM_MIN_MS = 250;

export type V2Upstream = Pick<Upstream, 'admit' | 'abort' | 'submitJob' | 'confirmJob' | 'getJob'>;

export type V2Outcome = (
  | { ok: true; job: jobsv1.Job /** An exact retry: the job of the first request. */; replayed: boolean }
  | { ok: false; error: MappedError }
) & { rateLimit: admissionv1.RateLimitInfo | undefined };

/** A v2 scrub: always authenticated before its body was read (no authentication rides with Admit). */
export type V2Request = Omit<ScrubRequest, 'phones'> & {
  /** As parsed, or read in place from the body's bytes (scrub-body.ts). */
  phones: readonly string[] | BodyPhones;
  caller: AuthenticatedCaller;
  /** The bytes the body was parsed from, when the route has them: the durable input may be a slice. */
  body?: Buffer | undefined;
  /** How long the body took to arrive (logged when it left too little budget). */
  uploadMs?: number;
  /** The gateway was told to stop (`StopClock`): a deadline too short is its bound's, not the upload's. */
  stopping?: boolean;
};

type SubmitOutcome = { outcome: 'stored'; job: jobsv1.Job; resumed: boolean } | CallFailure;
type ConfirmOutcome = { outcome: 'confirmed' } | CallFailure;

/** Spec, v2 limits: the durable input and the complete result each fit in 25 MiB. */
function sizeRefusal(sizes: DurableSizes): MappedError | undefined {
  if (sizes.canonical.length > LIMITS.maxBodyBytes) {
    return toHttp('payload_too_large', 'The durable input exceeds 26,214,400 bytes.');
  }
  if (sizes.resultBytes > LIMITS.maxBodyBytes) return toHttp('payload_too_large', RESULT_TOO_LARGE_MESSAGE);
  return undefined;
}

/**
 * A replay whose job is gone: admission keeps a v2 claim for the hard cap plus the metadata TTL from
 * admission, and a job that ended early has its metadata purged up to a day before its claim. The key
 * is spent (spec: Idempotency 2, a new logical request needs a new key): a 409 that says so, not a
 * 404 to a POST and never a second job.
 */
function replayError(error: unknown): MappedError {
  if (readPublicReason(error)?.reason !== 'job_not_found') return fromRpcError(error);
  return toHttp(
    'idempotency_key_reused',
    "This Idempotency-Key's job has passed its 30-day metadata retention; send the request with a new key.",
  );
}

/**
 * POST /v2/scrub, inside the 5-second admission budget: the three 25 MiB limits (result-estimate.ts)
 * -> admission.Admit (kind JOB) -> replay ? the stored job : jobs.SubmitJob -> admission.ConfirmJob
 * -> the job.
 *
 * The outcome of every step is explicit, and each failure point has its compensation below it:
 *   Admit       admitted | refused | unknown  unknown: nothing the gateway can undo (it has no
 *                                             admission id); admission undoes an admission whose caller
 *                                             gave up, and its claim reconciler resolves any left over
 *   job id      well formed | not             nothing: the reconciler gives the admission up
 *   GetJob      (replay) the job | error      nothing to undo: the replay reserved nothing
 *   SubmitJob   stored | refused | unknown    refused: abort. unknown: never guessed, nothing undone —
 *                                             the job may be stored (a stopped scheduler answers late).
 *                                             The claim stays in progress: a retry of the key resumes it
 *                                             after DNC_JOB_CLAIM_TIMEOUT_SECONDS (same job id; SubmitJob
 *                                             is idempotent by job id), or admission's reconciler asks
 *                                             the scheduler (FenceJob): stored -> confirmed, else the id
 *                                             fenced, the reservation released and the claim dropped
 *   ConfirmJob  confirmed | refused | unknown nothing: the job is durable and runs; a retry of the key
 *                                             or the reconciler confirms the claim
 */
export async function submitV2(
  deps: FlowDeps<V2Upstream>,
  request: V2Request,
  deadline: Deadline,
): Promise<V2Outcome> {
  const sizes = durableInput(request.country, request.phones, request.body);
  const tooLarge = sizeRefusal(sizes);
  if (tooLarge) return { ok: false, error: tooLarge, rateLimit: undefined };
  // Too little time left (an upload past UPLOAD_LEFT_OUT_MAX_MS used the budget): no internal call goes out
  // with next to none (it would carry a few ms, an AdmitMany batch could claim the key for a member already
  // timed out, and the organization assertion, taken before the body, may have run out). Said, and logged.
  if (deadline.remaining() < ADMISSION_MIN_MS) {
    if (request.stopping) {
      deps.log.warn('v2 body arrived while the gateway stops: not admitted, to be retried elsewhere');
      return { ok: false, error: toHttp('platform_failure', STOPPING, 1), rateLimit: undefined };
    }
    deps.log.warn(
      `v2 body arrived with too little admission budget left (upload ${Math.round(request.uploadMs ?? 0)} ms)`,
    );
    return { ok: false, error: toHttp('platform_failure', NO_TIME_LEFT, 1), rateLimit: undefined };
  }

  const admitted = await admitScrub(deps, request, admissionv1.RequestKind.JOB, deadline.remaining(), {
    resultRules: sizes.resultRules,
    canonical: sizes.canonical,
  });
  const { rateLimit } = admitted;
  if (admitted.outcome !== 'admitted') return { ok: false, error: fromRpcError(admitted.error), rateLimit };
  const { admission } = admitted;
  if (!JOB_ID_REGEXP.test(admission.jobId)) {
    deps.log.error('admission returned no job identity');
    return { ok: false, error: toHttp('platform_failure', undefined, 1), rateLimit };
  }

  if (admission.replay) {
    // Spec: an exact retry returns the same job (202 while active, 200 with the status once terminal).
    try {
      const job = await deps.upstream.getJob(request.caller, admission.jobId, deadline.remaining());
      return { ok: true, job, replayed: true, rateLimit };
    } catch (error) {
      return { ok: false, error: replayError(error), rateLimit };
    }
  }

  const submitted = await submit(deps.upstream, request, admission, sizes.canonical, deadline);
  switch (submitted.outcome) {
    case 'stored':
      break;
    case 'refused':
      // Not stored: undo the admission so the key can be retried.
      await abortAdmission(
        deps,
        admission.admissionId,
        deadline,
        'abort of a failed v2 admission did not complete',
      );
      return { ok: false, error: fromRpcError(submitted.error), rateLimit };
    case 'unknown':
      // Maybe stored: resolved by the retry's resume or by admission's reconciler, never guessed here.
      // Answered retryable whatever the failure (503 with Retry-After, never a 500 a client does not
      // retry): the exact retry is what returns the job if it was stored.
      deps.log.warn('v2 submit outcome unknown; left to the resume path and the claim reconciler');
      return {
        ok: false,
        error: fromRpcError(submitted.error, 'platform_failure', { unexpectedIsInternal: false }),
        rateLimit,
      };
  }

  const confirmed = await confirm(deps.upstream, admission, submitted.job, deadline);
  if (confirmed.outcome !== 'confirmed') deps.log.warn('confirm of a stored v2 job did not complete');
  // A retry that resumed its admission (the first answer lost) found its job stored already: it is the
  // same job, answered as an exact retry is (Idempotency-Replayed; 200 once terminal), not as a new one.
  // Found by a review (2026-12-03): it was a plain 202, even for a job that had succeeded.
  return { ok: true, job: submitted.job, replayed: submitted.resumed, rateLimit };
}

async function submit(
  upstream: Pick<Upstream, 'submitJob'>,
  request: V2Request,
  admission: admissionv1.AdmitResponse,
  canonicalPhones: Buffer,
  deadline: Deadline,
): Promise<SubmitOutcome> {
  try {
    const { job, resumed } = await upstream.submitJob(
      {
        jobId: admission.jobId,
        orgId: request.caller.orgId,
        reservationId: admission.admissionId,
        country: request.country,
        // One bytes field instead of up to 500,000 strings: far cheaper to encode and decode.
        canonicalPhones,
      },
      request.caller.orgAssertion,
      deadline.remaining(),
    );
    return { outcome: 'stored', job, resumed };
  } catch (error) {
    return callFailure(error);
  }
}

async function confirm(
  upstream: Pick<Upstream, 'confirmJob'>,
  admission: admissionv1.AdmitResponse,
  job: jobsv1.Job,
  deadline: Deadline,
): Promise<ConfirmOutcome> {
  try {
    await upstream.confirmJob(
      admission.admissionId,
      job.jobId,
      Math.max(CONFIRM_MIN_MS, deadline.remaining()),
    );
    return { outcome: 'confirmed' };
  } catch (error) {
    return callFailure(error);
  }
}
