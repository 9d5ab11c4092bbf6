import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import { Code, jobStatusOf, publicError, validationError } from '@dnc/kit';
import { jobsv1 } from '@dnc/proto';
import { decodePageToken, encodePageToken } from './page-token.js';
import { cancelCustomerJob, customerJob, jobMessage, type RouteDeps } from './routes.js';
import { listJobPage } from './store/job-pages.js';
import type { JobRow } from './store/jobs.js';

/** Jobs listed at once when the caller gives no limit, and at most. */
export const DEFAULT_LIST = 50;
export const MAX_LIST = 200;

const notFound = () => publicError(Code.NotFound, 'job_not_found');

/**
 * OrganizationJobsService: one organization's jobs as the dashboard shows them (the public job
 * resource plus when it started and finished). Cancel is the gateway's cancel, the same code path.
 */
export function organizationJobsService(deps: RouteDeps): ServiceImpl<typeof jobsv1.OrganizationJobsService> {
  const { store } = deps;
  const message = (job: JobRow) =>
    create(jobsv1.OrganizationJobSchema, {
      job: jobMessage(job, store.policy),
      startedAt: job.startedAt ? timestampFromDate(job.startedAt) : undefined,
      finishedAt: job.terminalAt ? timestampFromDate(job.terminalAt) : undefined,
    });
  const orgIdOf = (value: string) => {
    if (!value) throw validationError('org_id is required');
    return value;
  };
  return {
    async listOrganizationJobs(req) {
      const orgId = orgIdOf(req.orgId);
      const limit = req.limit === 0 ? DEFAULT_LIST : req.limit;
      if (limit < 1 || limit > MAX_LIST) throw validationError(`limit must be from 1 to ${MAX_LIST}`);
      const status = req.status === jobsv1.JobStatus.UNSPECIFIED ? undefined : jobStatusOf(req.status);
      if (req.status !== jobsv1.JobStatus.UNSPECIFIED && !status)
        throw validationError('status is not a job state');
      const after = req.pageToken ? decodePageToken(req.pageToken, status ?? '') : undefined;
      if (req.pageToken && !after)
        throw validationError('page_token is not a token of this listing (same status filter)');
      const { rows, next } = await listJobPage(store.pool, orgId, status, limit, after);
      return { jobs: rows.map(message), nextPageToken: next ? encodePageToken(next, status ?? '') : '' };
    },

    async getOrganizationJob(req) {
      const job = await customerJob(deps, orgIdOf(req.orgId), req.jobId);
      if (!job) throw notFound();
      return { job: message(job) };
    },

    async cancelOrganizationJob(req) {
      // The gateway's cancel; job_not_found for a job of another organization, exactly as for a missing one.
      const { job, cancelled } = await cancelCustomerJob(deps, orgIdOf(req.orgId), req.jobId);
      return { job: message(job), cancelled };
    },
  };
}
