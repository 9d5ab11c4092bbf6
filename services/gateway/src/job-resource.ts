import { isTerminalJobStatus, type JobStatus } from '@dnc/api-contract';
import { jobStatusOf } from '@dnc/kit';
import type { jobsv1 } from '@dnc/proto';

/** The public status of a job from the scheduler (a job it has not classified yet is queued). */
function statusOf(job: jobsv1.Job): JobStatus {
  return jobStatusOf(job.status) ?? 'queued';
}

function iso(ts: { seconds: bigint; nanos: number } | undefined): string {
  if (!ts) return new Date(0).toISOString();
  return new Date(Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1e6)).toISOString();
}

/** The job has reached a terminal state (an answer about it is 200, not 202). */
export function isTerminal(job: jobsv1.Job): boolean {
  return isTerminalJobStatus(statusOf(job));
}

/**
 * The public job resource: exactly the spec's fields, absolute URLs from DNC_PUBLIC_BASE_URL, `error`
 * only on failed or expired jobs (country and retry hint only where they apply), `cancel_requested`
 * only while an accepted cancel waits for an in-flight registry call. Nothing internal.
 */
export function jobResource(job: jobsv1.Job, baseUrl: string): Record<string, unknown> {
  const base = `${baseUrl.replace(/\/+$/, '')}/v2/scrub/${job.jobId}`;
  const status = statusOf(job);
  const resource: Record<string, unknown> = {
    job_id: job.jobId,
    status,
    country: job.country,
    submitted_count: job.submittedCount,
    created_at: iso(job.createdAt),
    status_url: base,
    result_url: `${base}/result`,
    cancel_url: `${base}/cancel`,
    expires_at: iso(job.expiresAt),
  };
  if ((status === 'failed' || status === 'expired') && job.error) {
    const error: Record<string, unknown> = { error: job.error.error };
    if (job.error.error.startsWith('country_service_') && job.error.country)
      error['country'] = job.error.country;
    if (job.error.retryAfterSeconds >= 1) error['retry_after_seconds'] = job.error.retryAfterSeconds;
    resource['error'] = error;
  }
  if (status === 'running' && job.cancelRequested) resource['cancel_requested'] = true;
  return resource;
}
