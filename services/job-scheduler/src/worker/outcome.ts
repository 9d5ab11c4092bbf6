import type { Logger } from '@dnc/kit';
import type { JsMsg } from '@nats-io/jetstream';
import { backoffMs, JobFailure } from '../domain/failures.js';
import type { JobMetrics } from '../metrics.js';
import type { QuotaSettlement } from '../settlement.js';
import { BlobMissing } from '../store/blobs.js';
import type { JobRow, JobStore } from '../store/jobs.js';
import { ExecutionStopped } from './execute.js';

/** What an attempt's end writes: the terminal state, a refused (stale) outcome, or the attempt given back. */
export class AttemptOutcomes {
  constructor(
    private readonly deps: {
      store: JobStore;
      settlement: QuotaSettlement;
      metrics: JobMetrics;
      logger: Logger;
    },
  ) {}

  /** This attempt lost its lease: whatever it still had to say was refused. */
  stale(job: JobRow, what: string): void {
    this.deps.metrics.staleCompletions.inc();
    this.deps.logger.warn({ job_id: job.id, attempt: job.attempts }, `stale attempt: lease lost, ${what}`);
  }

  /** Record how an attempt that threw ended, and what becomes of its message. */
  async afterError(job: JobRow, token: string, msg: JsMsg, error: unknown): Promise<void> {
    const { store, settlement, logger } = this.deps;
    try {
      if (error instanceof ExecutionStopped) {
        if (error.reason === 'cancel') {
          const done = await store.finishCancelled(job.id, token);
          if (done) {
            this.finished(done);
            await settlement.settle(done);
          } else this.stale(job, 'cancellation refused');
          msg.ack();
        } else if (error.reason === 'shutdown') {
          await store.handBack(job.id, token);
          msg.nak();
        } else {
          // Another owner or a terminal state took the job (or may have: no renewal confirmed for a
          // whole lease); nothing of this attempt is written. The lease is given back in case it is
          // still ours, and the message redelivered: a live owner makes the delivery wait, a terminal
          // job acks it.
          this.stale(job, 'attempt stopped');
          await store.releaseLease(job.id, token);
          msg.nak(1_000);
        }
        return;
      }
      const cause =
        error instanceof JobFailure
          ? error.failure
          : error instanceof BlobMissing
            ? { kind: 'platform' as const }
            : undefined;
      if (cause) {
        const done = await store.fail(job.id, token, cause);
        if (done) {
          logger.info({ job_id: job.id, error: done.error ?? 'cancelled' }, 'job ended without result');
          this.finished(done);
          await settlement.settle(done);
        } else this.stale(job, 'failure refused');
        msg.ack();
        return;
      }
      // Storage or worker trouble: give the attempt back; attempts are bounded by the claim.
      logger.warn({ job_id: job.id, attempt: job.attempts, err: error }, 'job attempt failed; will retry');
      await store.releaseLease(job.id, token);
      msg.nak(backoffMs(job.attempts, 1_000, 15_000));
    } catch (second) {
      // Postgres unreachable: the lease expires and the message is redelivered.
      logger.warn(
        { job_id: job.id, attempt: job.attempts, err: second },
        'could not record the attempt; redelivery will resume it',
      );
      msg.nak(backoffMs(job.attempts, 1_000, 15_000));
    }
  }

  finished(job: JobRow): void {
    this.deps.metrics.duration.observe({ state: job.status }, (Date.now() - job.createdAt.getTime()) / 1000);
    this.deps.logger.info({ job_id: job.id, state: job.status }, 'job terminal');
  }
}
