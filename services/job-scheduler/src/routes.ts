import { create } from '@bufbuild/protobuf';
import { type Timestamp, timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ConnectRouter, ServiceImpl } from '@connectrpc/connect';
import { isJobStatus } from '@dnc/api-contract/limits';
import {
  Code,
  ConnectError,
  jobStatusOf,
  type Logger,
  protoJobStatus,
  publicError,
  type ResultStreams,
} from '@dnc/kit';
import { jobsv1 } from '@dnc/proto';
import type { KeyRing } from './crypto/envelope.js';
import { keyStatus } from './crypto/key-status.js';
import type { Dispatcher } from './dispatch.js';
import {
  carriesError,
  expiresAt,
  type RetentionPolicy,
  resultAvailability,
  retryHintLeft,
} from './domain/states.js';
import type { JobMetrics } from './metrics.js';
import type { QuotaSettlement } from './settlement.js';
import { BlobMissing, blobKeyUsage, readBlob } from './store/blobs.js';
import type { CleanupStore } from './store/cleanup.js';
import { isJobId, type JobRow, type JobStore } from './store/jobs.js';
import { submitJob } from './submit.js';

/** The Job message: the spec's fields only. JobError only for failed and expired. */
export function jobMessage(job: JobRow, policy: RetentionPolicy): jobsv1.Job {
  return create(jobsv1.JobSchema, {
    jobId: job.id,
    status: protoJobStatus(job.status),
    country: job.country,
    submittedCount: job.submittedCount,
    createdAt: timestampFromDate(job.createdAt),
    expiresAt: timestampFromDate(expiresAt(job, policy)),
    error:
      carriesError(job.status) && job.error
        ? create(jobsv1.JobErrorSchema, {
            error: job.error,
            country: job.error === 'platform_failure' || job.error === 'job_expired' ? '' : job.country,
            retryAfterSeconds: retryHintLeft(job, new Date()),
          })
        : undefined,
    cancelRequested: job.status === 'running' && job.cancelRequested,
  });
}

const notFound = () => publicError(Code.NotFound, 'job_not_found');

export interface RouteDeps {
  store: JobStore;
  cleanup: CleanupStore;
  keys: KeyRing;
  dispatcher: Dispatcher;
  settlement: QuotaSettlement;
  metrics: JobMetrics;
  logger: Logger;
  track: <T>(p: Promise<T>) => Promise<T>;
  /** Bounds the result downloads streamed at once (result-streams.ts). */
  resultStreams: ResultStreams;
}

/** How far this process's clock may run behind the database's before a job past its cap is missed. */
const CLOCK_SKEW_MS = 5_000;

/**
 * Cancel a customer's job (POST /v2/scrub/{job_id}/cancel, the dashboard's cancel): the job as it is now,
 * and whether this call cancelled it (`cancelled`: it was active and no cancel was requested before)
 * rather than found it ended or already being cancelled. job_not_found for another organization's job.
 */
export async function cancelCustomerJob(
  deps: RouteDeps,
  orgId: string,
  jobId: string,
): Promise<{ job: JobRow; cancelled: boolean }> {
  const outcome = await deps.store.cancel(orgId, jobId);
  if (!outcome) throw notFound();
  if (outcome.expired) deps.logger.info({ job_id: jobId }, 'job expired at the hard cap (on cancel)');
  if (outcome.decision.kind === 'cancel_now' || outcome.expired) await ended(deps, outcome.job);
  return { job: outcome.job, cancelled: outcome.changed };
}

/**
 * The organization's job as its customer reads it. An active job past its hard cap is expired here, by
 * the database's clock, exactly as the sweep's next pass would expire it (spec, States: not terminal
 * within 24 hours -> expired, job_expired, quota released): a status or result read in between never
 * says `queued` or `running` past the cap. A failed release is retried by the sweeper.
 */
export async function customerJob(
  deps: RouteDeps,
  orgId: string,
  jobId: string,
): Promise<JobRow | undefined> {
  const job = await deps.store.findForOrg(orgId, jobId);
  if (!job || (job.status !== 'queued' && job.status !== 'running')) return job;
  if (job.hardCapAt.getTime() > Date.now() + CLOCK_SKEW_MS) return job;
  const [expired] = await deps.store.sweeps.expireOverdue(1, job.id);
  if (!expired) return job;
  deps.logger.info({ job_id: expired.id }, 'job expired at the hard cap (on read)');
  await ended(deps, expired);
  return expired;
}

/** A job this call ended: its duration observed, its reservation settled (retried by the sweep if not). */
async function ended(deps: RouteDeps, job: JobRow): Promise<void> {
  deps.metrics.duration.observe({ state: job.status }, (Date.now() - job.createdAt.getTime()) / 1000);
  await deps.settlement.settle(job);
}

/** GetJobResult: the stored result streamed in its segments once it is there and not expired. */
async function* jobResult(deps: RouteDeps, req: jobsv1.GetJobResultRequest, signal: AbortSignal) {
  const { store, keys } = deps;
  const policy = store.policy;
  // Ended by this process at the latest then, whatever its caller's deadline: the result's purge waits
  // for that (resultPurgeDelaySeconds), so a download never loses segments it has yet to read.
  const endBy = Date.now() + policy.resultStreamMaxMs;
  const job = await customerJob(deps, req.orgId, req.jobId);
  if (!job) throw notFound();
  // By the database's clock, as the purge that is due at the same moment: a scheduler whose clock runs
  // behind would serve a result past its 7 days while the purge is late.
  const availability = resultAvailability(
    { status: job.status, terminalAt: job.terminalAt, resultPurged: job.resultPurgedAt !== null },
    policy,
    await store.databaseNow(),
  );
  switch (availability.kind) {
    case 'not_ready':
      throw publicError(Code.FailedPrecondition, 'job_result_not_ready', {
        retryAfterSeconds: availability.retryAfterSeconds,
      });
    case 'job_expired':
      throw publicError(Code.FailedPrecondition, 'job_expired');
    case 'result_expired':
      throw publicError(Code.FailedPrecondition, 'job_result_expired');
    case 'ready':
      break;
  }
  const release = deps.resultStreams.acquire(job.orgId);
  if (!release) {
    deps.metrics.resultStreamsRefused.inc();
    throw publicError(Code.Unavailable, 'platform_failure', { retryAfterSeconds: 1 });
  }
  // Released when the stream ends, fails, or its caller goes away (the call's signal), whichever first.
  signal.addEventListener('abort', release, { once: true });
  try {
    // The first message also says how fresh the registry was (X-Registry-Snapshot-At) and how long the
    // whole document is (Content-Length).
    let head: { registrySnapshotTime?: Timestamp; resultBytes?: bigint } = job.registrySnapshotAt
      ? { registrySnapshotTime: timestampFromDate(job.registrySnapshotAt) }
      : {};
    const binding = { jobId: job.id, orgId: job.orgId, kind: 'result' as const };
    for await (const chunk of readBlob(store.pool, keys, binding, ({ byteLength }) => {
      head.resultBytes = BigInt(byteLength);
    })) {
      yield { chunk, ...head };
      head = {};
      // The reader asked for more: no segment is read past the download's time.
      if (Date.now() >= endBy)
        throw new ConnectError('the result download ran past its time', Code.DeadlineExceeded);
    }
  } catch (error) {
    // Purged between the state read and the first segment: retention passed.
    if (error instanceof BlobMissing) throw publicError(Code.FailedPrecondition, 'job_result_expired');
    throw error;
  } finally {
    signal.removeEventListener('abort', release);
    release();
  }
}

export function jobsService(deps: RouteDeps): ServiceImpl<typeof jobsv1.JobsService> {
  const { store } = deps;
  const policy = store.policy;
  return {
    submitJob: (req, ctx) => submitJob(deps, req, ctx),

    async fenceJob(req) {
      if (!isJobId(req.jobId))
        throw publicError(Code.InvalidArgument, 'validation_error', { message: 'job_id' });
      const job = await store.fence(req.jobId);
      return job ? { fenced: false, job: jobMessage(job, policy) } : { fenced: true };
    },

    async getJob(req) {
      const job = await customerJob(deps, req.orgId, req.jobId);
      if (!job) throw notFound();
      return { job: jobMessage(job, policy) };
    },

    getJobResult: (req, ctx) => jobResult(deps, req, ctx.signal),

    async cancelJob(req) {
      const { job } = await cancelCustomerJob(deps, req.orgId, req.jobId);
      return { job: jobMessage(job, policy) };
    },
  };
}

/** The most jobs of an organization `dnc-admin jobs list` shows, the newest first. */
export const ADMIN_LIST_MAX = 500;

export function jobsAdminService(deps: RouteDeps): ServiceImpl<typeof jobsv1.JobsAdminService> {
  const { store, cleanup } = deps;
  return {
    async listJobs(req) {
      if (!req.orgId)
        throw publicError(Code.InvalidArgument, 'validation_error', { message: 'org_id is required' });
      const status = req.status === jobsv1.JobStatus.UNSPECIFIED ? undefined : jobStatusOf(req.status);
      // One more than listed tells a list cut short (a review, 2026-12-05: it was cut at 500 in silence).
      const jobs = await store.list(
        req.orgId,
        status && isJobStatus(status) ? status : undefined,
        ADMIN_LIST_MAX + 1,
      );
      return {
        jobs: jobs.slice(0, ADMIN_LIST_MAX).map((j) => jobMessage(j, store.policy)),
        truncated: jobs.length > ADMIN_LIST_MAX,
      };
    },

    async getJobDetail(req) {
      const job = await store.find(req.jobId);
      if (!job) throw notFound();
      const history = await store.history(job.id);
      return {
        job: jobMessage(job, store.policy),
        orgId: job.orgId,
        attempts: job.attempts,
        history: history.map((h) =>
          create(jobsv1.JobTransitionSchema, {
            status: isJobStatus(h.status) ? protoJobStatus(h.status) : jobsv1.JobStatus.UNSPECIFIED,
            at: timestampFromDate(h.at),
            note: h.note,
          }),
        ),
      };
    },

    async getCleanupStatus() {
      const s = await cleanup.status();
      return {
        pending: BigInt(s.pending),
        failed: BigInt(s.failed),
        tasks: s.tasks.map((t) =>
          create(jobsv1.CleanupTaskSchema, {
            jobId: t.jobId,
            target: t.target,
            attempts: t.attempts,
            lastError: t.lastError,
            dueAt: timestampFromDate(t.dueAt),
          }),
        ),
      };
    },

    async getKeyStatus() {
      const keys = keyStatus(deps.keys, await blobKeyUsage(store.pool));
      return {
        keys: keys.map((k) =>
          create(jobsv1.KeyStatusSchema, {
            kekId: k.kekId,
            active: k.active,
            configured: k.configured,
            blobs: BigInt(k.blobs),
            ...(k.retainedUntil ? { retainedUntil: timestampFromDate(k.retainedUntil) } : {}),
            retirable: k.retirable,
          }),
        ),
      };
    },
  };
}

/** JobsService on the data plane; JobsAdminService on the admin listener (operator, audited). */
export function jobsRoutes(deps: RouteDeps) {
  return {
    data: (router: ConnectRouter) => {
      router.service(jobsv1.JobsService, jobsService(deps));
    },
    admin: (router: ConnectRouter) => {
      router.service(jobsv1.JobsAdminService, jobsAdminService(deps));
    },
  };
}
