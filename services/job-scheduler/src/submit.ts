import type { HandlerContext } from '@connectrpc/connect';
import { isCountryCode, LIMITS } from '@dnc/api-contract/limits';
import { Code, ConnectError, commitBy, publicError } from '@dnc/kit';
import type { jobsv1 } from '@dnc/proto';
import { canonicalPhoneCount } from './domain/canonical-input.js';
import { jobMessage, type RouteDeps } from './routes.js';
import { CallerGone, isJobId, JobFenced } from './store/jobs.js';

const invalidPhones = () =>
  publicError(Code.InvalidArgument, 'validation_error', {
    message: `phones: at most ${LIMITS.v2MaxInputs} strings of at most ${LIMITS.maxPhoneLength} characters`,
  });

/**
 * The durable input of a submit: `canonical_phones`, a JSON array of strings, stored as received once
 * checked (on its bytes: domain/canonical-input.ts); bounded before anything is stored.
 */
function durableInput(req: jobsv1.SubmitJobRequest): { count: number; pieces: Iterable<string | Buffer> } {
  const bytes = req.canonicalPhones;
  const count = canonicalPhoneCount(bytes);
  if (count === undefined) throw invalidPhones();
  return { count, pieces: [Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)] };
}

/** What a new job's storage keeps of its caller's deadline for the answer to travel back. */
const SUBMIT_ANSWER_MS = 100;

/**
 * SubmitJob: the job stored with its input (idempotent by job id) and dispatched when new. A new job is
 * stored only while its answer can still reach its caller in time (kit `commitBy`): one stored after the
 * gateway answered 503 would run and be charged with nobody told (found by a review, 2026-12-05).
 */
export async function submitJob(
  deps: RouteDeps,
  req: jobsv1.SubmitJobRequest,
  ctx: HandlerContext,
): Promise<{ job: jobsv1.Job; resumed: boolean }> {
  const { store, dispatcher } = deps;
  if (!isJobId(req.jobId)) throw publicError(Code.InvalidArgument, 'validation_error', { message: 'job_id' });
  if (!req.orgId || !req.reservationId)
    throw publicError(Code.InvalidArgument, 'validation_error', { message: 'org_id and reservation_id' });
  if (!isCountryCode(req.country))
    throw publicError(Code.InvalidArgument, 'validation_error', { message: 'country' });
  const input = durableInput(req);
  const { job, created } = await store
    .submit({
      jobId: req.jobId,
      orgId: req.orgId,
      country: req.country,
      reservationId: req.reservationId,
      count: input.count,
      input: input.pieces,
      storeBy: commitBy(Date.now(), ctx.timeoutMs(), req.deadlineUnixMs, 'jobs.SubmitJob') - SUBMIT_ANSWER_MS,
    })
    .catch((error: unknown) => {
      // Its admission was given up by the reconciler (reservation released): never stored.
      if (error instanceof JobFenced) throw publicError(Code.FailedPrecondition, 'platform_failure');
      if (error instanceof CallerGone) {
        // In the logs: a client whose uploads always leave too little time would never get its job.
        deps.logger.warn({ job_id: req.jobId }, 'job not stored: its caller had stopped waiting');
        throw new ConnectError(
          'the caller gave up before the job was stored: nothing stored',
          Code.DeadlineExceeded,
        );
      }
      throw error;
    });
  // The id names another organization's job (never expected: ids are random): refuse.
  if (job.orgId !== req.orgId || job.reservationId !== req.reservationId)
    throw publicError(Code.AlreadyExists, 'platform_failure');
  // Published after the answer, not before: a publish waits up to 2 s for JetStream (failing over, slow),
  // and a stored job answered past its caller's deadline is a 503 followed by a job run and charged
  // (found by a review, 2026-12-05). A publish not confirmed is made again by the sweeper.
  if (created)
    void deps.track(dispatcher.dispatch(job)).catch((error: unknown) => {
      deps.logger.warn(
        { job_id: job.id, err: error },
        'dispatch not recorded; the sweeper dispatches the job',
      );
    });
  return { job: jobMessage(job, store.policy), resumed: !created };
}
