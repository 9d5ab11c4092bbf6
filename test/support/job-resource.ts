/**
 * The job resource's fields, in the order of the spec's table (Job resource: ScrubJobAccepted and
 * ScrubJobStatus). The status resource adds `error` when failed or expired, then `cancel_requested`.
 */
export const JOB_FIELDS = [
  'job_id',
  'status',
  'country',
  'submitted_count',
  'created_at',
  'status_url',
  'result_url',
  'cancel_url',
  'expires_at',
] as const;
