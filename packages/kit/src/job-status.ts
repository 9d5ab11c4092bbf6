import { JOB_STATUSES, type JobStatus } from '@dnc/api-contract/limits';
import { jobsv1 } from '@dnc/proto';

const TO_PROTO: Record<JobStatus, jobsv1.JobStatus> = {
  queued: jobsv1.JobStatus.QUEUED,
  running: jobsv1.JobStatus.RUNNING,
  succeeded: jobsv1.JobStatus.SUCCEEDED,
  failed: jobsv1.JobStatus.FAILED,
  cancelled: jobsv1.JobStatus.CANCELLED,
  expired: jobsv1.JobStatus.EXPIRED,
};

/** A public job status as it travels between services (the scheduler's answers). */
export function protoJobStatus(status: JobStatus): jobsv1.JobStatus {
  return TO_PROTO[status];
}

/** The public job status of a JobStatus on the wire; undefined for UNSPECIFIED. */
export function jobStatusOf(status: jobsv1.JobStatus): JobStatus | undefined {
  return JOB_STATUSES.find((s) => TO_PROTO[s] === status);
}
