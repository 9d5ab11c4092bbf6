import { type Client, Code, ConnectError } from '@connectrpc/connect';
import type { Logger } from '@dnc/kit';
import type { quotav1 } from '@dnc/proto';
import type { JobMetrics } from './metrics.js';
import type { JobRow, JobStore } from './store/jobs.js';

/**
 * How a settlement ended: `settled` (or final: nothing left to try); `refused`, quota judged this job's
 * request itself wrong (a malformed reservation id, say: trying again changes nothing until someone looks);
 * `unanswered`, anything else (quota down, hung, overloaded, waiting on a lock, failing for every call, or the
 * record not written), which the next tries explain.
 */
export type SettleOutcome = 'settled' | 'refused' | 'unanswered';

const REFUSED = new Set<Code>([Code.InvalidArgument, Code.OutOfRange, Code.AlreadyExists]);

/**
 * Settles a terminal job's reservation with the quota service: commit on success, release otherwise.
 * Quota is idempotent by reservation id, so a retry after a lost answer changes nothing; the job row
 * records the confirmation, and the sweeper retries unconfirmed ones.
 */
export class QuotaSettlement {
  constructor(
    private readonly quota: Client<typeof quotav1.QuotaService>,
    private readonly store: JobStore,
    private readonly metrics: JobMetrics,
    private readonly logger: Logger,
  ) {}

  async settle(job: JobRow): Promise<SettleOutcome> {
    if (!job.quotaSettlement || job.quotaSettledAt) return 'settled';
    try {
      if (job.quotaSettlement === 'commit') await this.quota.commit({ reservationId: job.reservationId });
      else await this.quota.release({ reservationId: job.reservationId });
      await this.store.sweeps.markSettled(job.id);
      return 'settled';
    } catch (error) {
      const code = ConnectError.from(error).code;
      if (code === Code.FailedPrecondition || code === Code.NotFound) {
        // Final answers: the reservation was released (or never existed) elsewhere, for example by
        // admission undoing a submit whose answer was lost. Retrying cannot change it. Counted: a
        // refused commit is a succeeded job nobody is charged for (alert DncJobSettlementRefused).
        // Once per job: the settler that records it counts it.
        if (await this.store.sweeps.markSettled(job.id)) {
          this.metrics.quotaSettleRefused.inc({ settlement: job.quotaSettlement });
          this.logger.warn(
            { job_id: job.id, settlement: job.quotaSettlement, code: Code[code] },
            'reservation cannot be settled; recorded as final',
          );
        }
        return 'settled';
      }
      this.metrics.quotaSettleFailures.inc();
      this.logger.warn({ job_id: job.id, err: error }, 'quota settlement failed; will retry');
      return REFUSED.has(code) ? 'refused' : 'unanswered';
    }
  }
}
