import { Counter, Gauge, Histogram, type Registry } from '@dnc/kit';

export interface JobMetrics {
  jobs: Gauge<'state'>;
  duration: Histogram<'state'>;
  dispatchLag: Histogram;
  nearHardCap: Gauge;
  cleanupPending: Gauge;
  blobsWithoutKey: Gauge;
  cleanupFailures: Counter<'target'>;
  quotaSettleFailures: Counter;
  quotaSettleRefused: Counter<'settlement'>;
  staleCompletions: Counter;
  resultStreamsRefused: Counter;
}

const DURATION_BUCKETS = [0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600, 21_600, 86_400];
const LAG_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 15, 60, 300];

/** Metric names are fixed (dashboards and alerts use them); labels never carry ids or numbers. */
export function jobMetrics(registry: Registry): JobMetrics {
  const metrics: JobMetrics = {
    jobs: new Gauge({
      name: 'dnc_jobs',
      help: 'Jobs by state.',
      labelNames: ['state'],
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'dnc_job_duration_seconds',
      help: 'Admission to terminal state, by terminal state.',
      labelNames: ['state'],
      buckets: DURATION_BUCKETS,
      registers: [registry],
    }),
    dispatchLag: new Histogram({
      name: 'dnc_job_dispatch_lag_seconds',
      help: 'Admission to first execution start.',
      buckets: LAG_BUCKETS,
      registers: [registry],
    }),
    nearHardCap: new Gauge({
      name: 'dnc_jobs_near_hard_cap',
      help: 'Active jobs within the last twelfth of their hard cap.',
      registers: [registry],
    }),
    cleanupPending: new Gauge({
      name: 'dnc_cleanup_pending',
      help: 'Retention tasks due and not yet verified done.',
      registers: [registry],
    }),
    blobsWithoutKey: new Gauge({
      name: 'dnc_job_blobs_without_key',
      help: 'Job blobs not yet purged whose key-encryption key is not in DNC_KEKS: they cannot be opened.',
      registers: [registry],
    }),
    cleanupFailures: new Counter({
      name: 'dnc_cleanup_failures_total',
      help: 'Failed retention task attempts (they are retried).',
      labelNames: ['target'],
      registers: [registry],
    }),
    quotaSettleFailures: new Counter({
      name: 'dnc_job_quota_settle_failures_total',
      help: 'Failed quota commit/release calls for terminal jobs (they are retried).',
      registers: [registry],
    }),
    quotaSettleRefused: new Counter({
      name: 'dnc_job_quota_settle_refused_total',
      help: 'Terminal jobs whose reservation quota refused to settle for good (released or unknown there): a refused commit is work done and not charged.',
      labelNames: ['settlement'],
      registers: [registry],
    }),
    resultStreamsRefused: new Counter({
      name: 'dnc_job_result_streams_refused_total',
      help: 'Result downloads refused because this process streamed its maximum at once, in all or for the organization (DNC_RESULT_STREAMS_MAX, DNC_RESULT_STREAMS_PER_ORG).',
      registers: [registry],
    }),
    staleCompletions: new Counter({
      name: 'dnc_job_stale_completions_total',
      help: 'Attempts whose outcome was refused because another worker had taken the job over (lease lost).',
      registers: [registry],
    }),
  };
  // Exported from the start at 0, so the first refusal is an increase an alert sees.
  for (const settlement of ['commit', 'release']) metrics.quotaSettleRefused.inc({ settlement }, 0);
  return metrics;
}
