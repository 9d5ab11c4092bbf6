import type { MessageInitShape } from '@bufbuild/protobuf';
import { type CheckAnswer, Code, ConnectError, readPublicReason } from '@dnc/kit';
import type { admissionv1, jobsv1 } from '@dnc/proto';
import type { BodyPhones } from './scrub-body.js';

/** The key and address a request presented, for authentication by admission. */
export interface PresentedCredentials {
  apiKey: string;
  clientAddress: string;
}

export type AdmitRequest = MessageInitShape<typeof admissionv1.AdmitRequestSchema>;

/** The organization a job call acts for, and admission's assertion of it (AuthenticateResponse). */
export interface OrgScope {
  orgId: string;
  orgAssertion: string;
}

export interface SubmitJobRequest {
  jobId: string;
  orgId: string;
  /** The admission id: the quota reservation the job settles. */
  reservationId: string;
  country: string;
  /** The phones as one UTF-8 JSON array, in order (see `durableInput`). */
  canonicalPhones: Uint8Array;
}

/**
 * Every call the gateway makes to the services behind it, one request at a time. The flows and the
 * routes see only this; how a call travels (one Connect call, or a batch shared with the requests in
 * flight) is the business of its implementation (`upstream/port.ts`). Every call takes its own
 * deadline and fails with the ConnectError the service raised.
 */
export interface Upstream {
  /** Steps 0-3 of the check order for a presented key (admission.Authenticate). */
  authenticate(
    credentials: PresentedCredentials,
    timeoutMs: number,
  ): Promise<admissionv1.AuthenticateResponse>;
  /** Steps 5-9 (and 0-3 first when the request carries `credentials`): admission.Admit. */
  admit(request: AdmitRequest, timeoutMs: number): Promise<admissionv1.AdmitResponse>;
  /** Outcomes of `phones`, in order, from the adapter at `address` (chosen by admission). */
  check(
    address: string,
    country: string,
    phones: readonly string[] | BodyPhones,
    timeoutMs: number,
  ): Promise<CheckAnswer>;
  /** A v1 admission completed: quota committed, usage recorded, idempotency completed. */
  complete(admissionId: string, timeoutMs: number): Promise<void>;
  /**
   * An admission undone: reservation released, idempotency claim dropped; or, when it turned out
   * completed (its reservation was committed), nothing undone and `completed` true.
   */
  abort(admissionId: string, timeoutMs: number): Promise<{ completed: boolean }>;
  /** A v2 job stored and dispatched (idempotent by job id); the stored job. */
  /** The job stored; `resumed` when its id was stored already (a retry resuming its admission). */
  submitJob(
    request: SubmitJobRequest,
    orgAssertion: string,
    timeoutMs: number,
  ): Promise<{ job: jobsv1.Job; resumed: boolean }>;
  /** The v2 idempotency claim marked accepted once its job is stored. */
  confirmJob(admissionId: string, jobId: string, timeoutMs: number): Promise<void>;
  getJob(org: OrgScope, jobId: string, timeoutMs: number): Promise<jobsv1.Job>;
  cancelJob(org: OrgScope, jobId: string, timeoutMs: number): Promise<jobsv1.Job>;
  /** The complete result of a succeeded job, streamed in chunks. */
  jobResult(
    org: OrgScope,
    jobId: string,
    options: { signal: AbortSignal; timeoutMs: number },
  ): AsyncIterable<jobsv1.GetJobResultResponse>;
}

/**
 * How a failed call ended for the state behind it. `refused`: the service answered and changed
 * nothing. `unknown`: the answer never came or the service failed midway (deadline, cancellation, lost
 * connection, an internal error), so the call may have taken effect. A flow decides each step's
 * compensation from this, never from the error's text.
 */
export type CallFailure = { outcome: 'refused'; error: unknown } | { outcome: 'unknown'; error: unknown };

const MAY_HAVE_APPLIED = new Set<Code>([
  Code.DeadlineExceeded,
  Code.Canceled,
  Code.Unavailable,
  Code.Unknown,
  Code.Internal,
  Code.DataLoss,
]);

export function callFailure(error: unknown): CallFailure {
  const { code } = ConnectError.from(error);
  if (MAY_HAVE_APPLIED.has(code)) return { outcome: 'unknown', error };
  // `Aborted` is also how connect-node reports a connection reset (ECONNRESET) or a stream destroyed
  // under the call: the service may have applied it and its answer was lost. A service's own `Aborted`
  // (an idempotency claim in progress) carries its public reason. Found by a review (2026-12-04): a reset
  // after the scheduler stored a job was taken for a refusal, the admission undone, the job run uncharged
  // and the retry given a second job.
  if (code === Code.Aborted && !readPublicReason(error)) return { outcome: 'unknown', error };
  return { outcome: 'refused', error };
}

/** What a flow logs: a fixed message, never a phone, key or body. */
export interface FlowLog {
  warn(message: string): void;
  error(message: string): void;
}
