import {
  currentRequestId,
  injectTraceHeaders,
  type Logger,
  type NatsConnection,
  natsNames,
  REQUEST_ID_HEADER,
} from '@dnc/kit';
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { headers } from '@nats-io/transport-node';
import type { JobRow, JobStore } from './store/jobs.js';

/** The work message: only the job id. Numbers never travel through NATS. */
export interface WorkMessage {
  job_id: string;
}

/**
 * Publishes jobs to DNC_JOBS (a subject per country). The first publish uses the job id as
 * Nats-Msg-Id, so a repeated first publish is dropped by the stream; a later re-dispatch of a job
 * whose message was lost gets its own id. Postgres records each confirmed publish.
 */
export class Dispatcher {
  private readonly js: JetStreamClient;
  private jsm: JetStreamManager | undefined;
  private readonly names: ReturnType<typeof natsNames>;

  constructor(
    private readonly nc: NatsConnection,
    prefix: string,
    private readonly store: JobStore,
    private readonly logger: Logger,
  ) {
    this.js = jetstream(this.nc);
    this.names = natsNames(prefix);
  }

  /**
   * The messages the country's work queue still holds for its workers: waiting to be delivered, or
   * delivered and not yet answered (a job being worked on, a delivery handed back for later). A message
   * delivered `max_deliver` times without an ack is in neither: it will never be delivered again.
   * Undefined when unsure.
   */
  async liveMessages(country: string): Promise<number | undefined> {
    try {
      this.jsm ??= await jetstreamManager(this.nc);
      const info = await this.jsm.consumers.info(this.names.jobsStream, this.names.jobsConsumer(country));
      return info.num_pending + info.num_ack_pending;
    } catch {
      return undefined;
    }
  }

  async dispatch(job: JobRow): Promise<boolean> {
    const msgID = job.dispatchCount === 0 ? job.id : `${job.id}.${job.dispatchCount}`;
    const body: WorkMessage = { job_id: job.id };
    // The worker runs the job under the request (id and trace) that submitted it; a re-dispatch by the
    // sweeper has neither.
    const hdrs = headers();
    const requestId = currentRequestId();
    if (requestId !== undefined) hdrs.set(REQUEST_ID_HEADER, requestId);
    injectTraceHeaders(hdrs);
    try {
      await this.js.publish(this.names.jobsSubject(job.country), JSON.stringify(body), {
        msgID,
        timeout: 2_000,
        ...(hdrs.keys().length > 0 ? { headers: hdrs } : {}),
      });
    } catch (error) {
      // The job is durable in Postgres; the reconciler publishes it again.
      this.logger.warn({ job_id: job.id, err: error }, 'dispatch not confirmed; will retry');
      return false;
    }
    await this.store.markDispatched(job.id);
    return true;
  }
}
