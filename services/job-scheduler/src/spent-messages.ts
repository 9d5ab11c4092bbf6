import { type Logger, type NatsConnection, natsNames } from '@dnc/kit';
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import type { Subscription } from '@nats-io/transport-node';
import type { WorkMessage } from './dispatch.js';
import type { JobStore } from './store/jobs.js';

/** JetStream's advisory of a message delivered `max_deliver` times without an ack (never delivered again). */
interface MaxDeliveriesAdvisory {
  stream?: string;
  stream_seq?: number;
}

/**
 * A work message spent by `max_deliver` (a worker killed before its claim, deliveries failed while
 * PostgreSQL was out of time, a worker stopped on its last delivery): JetStream announces it, and its job,
 * if still queued, is marked as not dispatched, so the sweeper publishes it again at its next tick; the
 * spent message is deleted (a work-queue stream keeps it otherwise for its 48 h). The sweeper's count of
 * missing messages stays the fallback (an advisory is not stored: one sent while no scheduler listens is
 * lost). Found by a review (2026-12-04): the count republishes the oldest queued jobs, which may hold live
 * messages, and their second messages then hide the spent one until they are consumed. One scheduler of
 * the queue group handles each advisory.
 */
export class SpentMessageWatch {
  private sub: Subscription | undefined;
  private jsm: JetStreamManager | undefined;
  private readonly names: ReturnType<typeof natsNames>;

  constructor(
    private readonly nc: NatsConnection,
    prefix: string,
    private readonly store: JobStore,
    private readonly logger: Logger,
  ) {
    this.names = natsNames(prefix);
  }

  start(): void {
    const subject = `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${this.names.jobsStream}.*`;
    this.sub = this.nc.subscribe(subject, {
      queue: 'dnc-job-scheduler',
      callback: (error, msg) => {
        if (error) {
          this.logger.warn(
            { err: error },
            'spent work messages not heard (the advisory subscription failed); the sweeper counts them',
          );
          return;
        }
        let advisory: MaxDeliveriesAdvisory;
        try {
          advisory = msg.json<MaxDeliveriesAdvisory>();
        } catch {
          return;
        }
        if (typeof advisory.stream_seq !== 'number') return;
        this.handle(advisory.stream_seq).catch((e: unknown) =>
          this.logger.warn({ err: e }, 'spent work message not handled; the sweeper counts it later'),
        );
      },
    });
  }

  private async handle(seq: number): Promise<void> {
    this.jsm ??= await jetstreamManager(this.nc);
    const stored = await this.jsm.streams.getMessage(this.names.jobsStream, { seq });
    if (!stored) return;
    const jobId = (JSON.parse(stored.string()) as WorkMessage).job_id;
    if (typeof jobId !== 'string') return;
    if (await this.store.markSpent(jobId))
      this.logger.warn({ job_id: jobId }, 'work message spent by max_deliver; the job is published again');
    await this.jsm.streams.deleteMessage(this.names.jobsStream, seq, false).catch(() => false);
  }

  async stop(): Promise<void> {
    await this.sub?.drain().catch(() => {});
  }
}
