import type { AdapterDirectory, Logger, NatsConnection } from '@dnc/kit';
import {
  extractTraceContext,
  inSpan,
  isWellFormedRequestId,
  natsNames,
  REQUEST_ID_HEADER,
  runWithRequestId,
  SpanKind,
} from '@dnc/kit';
import { AckPolicy, type Consumer, type JsMsg, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import type { KeyRing } from '../crypto/envelope.js';
import type { WorkMessage } from '../dispatch.js';
import { backoffMs } from '../domain/failures.js';
import { renderResult } from '../domain/result.js';
import type { JobMetrics } from '../metrics.js';
import type { QuotaSettlement } from '../settlement.js';
import { readBlobWhole } from '../store/blobs.js';
import type { JobRow, JobStore } from '../store/jobs.js';
import { type AdapterClients, ExecutionStopped, executeUnits } from './execute.js';
import { LeaseKeeper } from './lease.js';
import { jobMemoryCost, MemoryBudget } from './memory.js';
import { AttemptOutcomes } from './outcome.js';

export interface WorkerOptions {
  prefix: string;
  countries: string[];
  jobConcurrency: number;
  unitConcurrency: number;
  unitSize: number;
  retries: number;
  callTimeoutMs: number;
  leaseMs: number;
  ackWaitMs: number;
  maxDeliver: number;
  maxAttempts: number;
  /** Bytes of V8 heap the jobs of this process may hold at once (jobMemoryCost each). */
  memoryBudgetBytes: number;
}

export interface WorkerDeps {
  nc: NatsConnection;
  store: JobStore;
  keys: KeyRing;
  directory: AdapterDirectory;
  clients: AdapterClients;
  settlement: QuotaSettlement;
  metrics: JobMetrics;
  logger: Logger;
}

/**
 * A job's inputs, parsed. The decrypted buffer and the decoded text are this function's alone, so
 * they are garbage once it returns: a running job holds its phones only (see memory.ts).
 */
async function readPhones(store: JobStore, keys: KeyRing, job: JobRow): Promise<string[]> {
  const input = await readBlobWhole(store.pool, keys, { jobId: job.id, orgId: job.orgId, kind: 'input' });
  return JSON.parse(input.toString('utf8')) as string[];
}

/**
 * JetStream pull consumers, one durable per country, each with bounded job concurrency. A message
 * only says "job X is ready"; the worker claims the job in Postgres with a lease, heartbeats both the
 * lease and the message while it works, and acks after the outcome is written.
 */
export class JobWorker {
  private stopping = false;
  private readonly loops: Promise<void>[] = [];
  private readonly inFlight = new Set<{ abort: AbortController; done: Promise<void> }>();
  private readonly memory: MemoryBudget;
  private readonly outcomes: AttemptOutcomes;

  constructor(
    private readonly deps: WorkerDeps,
    private readonly options: WorkerOptions,
  ) {
    this.memory = new MemoryBudget(options.memoryBudgetBytes);
    this.outcomes = new AttemptOutcomes(deps);
  }

  /** Create (or update) the durable consumers and start pulling. */
  async start(): Promise<void> {
    const names = natsNames(this.options.prefix);
    const jsm = await jetstreamManager(this.deps.nc);
    const js = jetstream(this.deps.nc);
    for (const country of this.options.countries) {
      const config = {
        durable_name: names.jobsConsumer(country),
        filter_subject: names.jobsSubject(country),
        ack_policy: AckPolicy.Explicit,
        ack_wait: nanos(this.options.ackWaitMs),
        max_deliver: this.options.maxDeliver,
        max_ack_pending: 1_000,
      };
      try {
        await jsm.consumers.add(names.jobsStream, config);
      } catch {
        await jsm.consumers.update(names.jobsStream, config.durable_name, {
          ack_wait: config.ack_wait,
          max_deliver: config.max_deliver,
          max_ack_pending: config.max_ack_pending,
        });
      }
      const consumer = await js.consumers.get(names.jobsStream, config.durable_name);
      for (let i = 0; i < this.options.jobConcurrency; i++) this.loops.push(this.pull(consumer));
    }
  }

  /** Stop pulling; hand running jobs back (lease released, message nak'ed) so another worker resumes. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const job of this.inFlight) job.abort.abort();
    await Promise.all([...this.inFlight].map((j) => j.done));
    await Promise.all(this.loops);
  }

  /**
   * One pull loop: it never rejects. A work queue that cannot be read, or a job whose handling threw
   * past its own error paths, costs a pause (backoff 0.5 s doubling to 15 s, reset by the next
   * success), never the loop.
   */
  private async pull(consumer: Consumer): Promise<void> {
    let failures = 0;
    const pause = (error: unknown, what: string) => {
      failures++;
      this.deps.logger.warn({ err: error, failures }, what);
      return new Promise((r) => setTimeout(r, backoffMs(failures - 1, 500, 15_000)));
    };
    while (!this.stopping) {
      let msg: JsMsg | null = null;
      try {
        msg = await consumer.next({ expires: 2_000 });
      } catch (error) {
        if (this.stopping) return;
        await pause(error, 'work queue unavailable; retrying');
        continue;
      }
      if (!msg) continue;
      if (this.stopping) {
        msg.nak();
        return;
      }
      const abort = new AbortController();
      // The job's log lines and adapter calls carry the request id and the trace of its submission.
      const requestId = msg.headers?.get(REQUEST_ID_HEADER);
      const work = msg;
      const run = () =>
        inSpan(
          'job run',
          {
            kind: SpanKind.CONSUMER,
            parent: extractTraceContext(work.headers),
            attributes: { 'messaging.system': 'nats' },
          },
          () => this.handle(work, abort),
        );
      const entry = {
        abort,
        done: isWellFormedRequestId(requestId) ? runWithRequestId(requestId, run) : run(),
      };
      this.inFlight.add(entry);
      try {
        await entry.done;
        failures = 0;
      } catch (error) {
        await pause(error, 'job handling failed; the message will be redelivered');
      } finally {
        this.inFlight.delete(entry);
      }
    }
  }

  private async handle(msg: JsMsg, abort: AbortController): Promise<void> {
    let jobId: string;
    try {
      jobId = (JSON.parse(msg.string()) as WorkMessage).job_id;
      if (typeof jobId !== 'string') throw new Error('no job id');
    } catch {
      msg.term('malformed work message');
      return;
    }
    // Memory first: a job that does not fit waits here, unclaimed, and burns no attempt.
    let release: () => void;
    try {
      release = await this.admitMemory(jobId, msg, abort.signal);
    } catch (error) {
      if (abort.signal.aborted) msg.nak();
      else {
        this.deps.logger.warn({ job_id: jobId, err: error }, 'job size unknown; message will be redelivered');
        msg.nak(2_000);
      }
      return;
    }
    try {
      await this.claimAndRun(jobId, msg, abort);
    } finally {
      release();
    }
  }

  /** Wait until the job's memory fits the budget, keeping its message alive meanwhile. */
  private async admitMemory(jobId: string, msg: JsMsg, signal: AbortSignal): Promise<() => void> {
    const size = await this.deps.store.inputSize(jobId);
    const cost = size ? jobMemoryCost(size.bytes, size.count) : 0;
    const keep = setInterval(
      () => {
        try {
          msg.working();
        } catch {
          // NATS reconnecting: redelivery at worst.
        }
      },
      Math.max(250, this.options.ackWaitMs / 3),
    );
    try {
      return await this.memory.admit(cost, signal);
    } finally {
      clearInterval(keep);
    }
  }

  private async claimAndRun(jobId: string, msg: JsMsg, abort: AbortController): Promise<void> {
    const { store, metrics, settlement } = this.deps;
    let claim: Awaited<ReturnType<JobStore['claim']>>;
    const grantedAt = performance.now();
    try {
      claim = await store.claim(jobId, this.options.leaseMs, this.options.maxAttempts);
    } catch (error) {
      this.deps.logger.warn({ job_id: jobId, err: error }, 'claim failed; message will be redelivered');
      msg.nak(2_000);
      return;
    }
    switch (claim.kind) {
      case 'gone':
      case 'terminal':
        msg.ack();
        return;
      case 'held':
        // Another worker holds a live lease: look again when it would have expired.
        msg.nak(claim.retryInMs + 500);
        return;
      case 'terminalized':
        this.outcomes.finished(claim.job);
        await settlement.settle(claim.job);
        msg.ack();
        return;
      case 'claimed':
        break;
    }
    const { job, token } = claim;
    if (job.attempts === 1 && job.startedAt)
      metrics.dispatchLag.observe(Math.max(0, (job.startedAt.getTime() - job.createdAt.getTime()) / 1000));
    this.deps.logger.info({ job_id: job.id, attempt: job.attempts }, 'job started');
    await this.run(job, token, msg, abort, grantedAt);
  }

  private async run(
    job: JobRow,
    token: string,
    msg: JsMsg,
    abort: AbortController,
    grantedAt: number,
  ): Promise<void> {
    const { store, settlement } = this.deps;
    let stopReason: 'lease_lost' | 'shutdown' = 'shutdown';
    const lease = new LeaseKeeper({
      leaseMs: this.options.leaseMs,
      intervalMs: Math.max(250, Math.min(this.options.leaseMs, this.options.ackWaitMs) / 3),
      grantedAt,
      renew: () => store.renewLease(job.id, token, this.options.leaseMs),
      heartbeat: () => {
        try {
          msg.working();
        } catch {
          // NATS reconnecting: the lease in Postgres still protects the job.
        }
      },
      onLost: () => {
        stopReason = 'lease_lost';
        abort.abort();
      },
    });
    lease.start();
    const state = async (ok: boolean): Promise<'go' | 'cancel' | 'lease_lost'> => {
      if (lease.isLost) return 'lease_lost';
      if (ok) return 'go';
      const r = await store.renewLease(job.id, token, this.options.leaseMs);
      if (r.lost) return 'lease_lost';
      return r.cancelRequested ? 'cancel' : 'go';
    };
    try {
      const t0 = performance.now();
      const phones = await readPhones(store, this.deps.keys, job);
      const t1 = performance.now();
      // The oldest snapshot any unit was answered from: the result is only as fresh as that.
      let snapshotAt: Date | undefined;
      const outcomes = await executeUnits(
        job.country,
        phones,
        this.deps.directory,
        this.deps.clients,
        {
          signal: abort.signal,
          stopReason: () => stopReason,
          // One line per call (ids and counts only): the invariant checker bounds calls per unit by it.
          onCall: (unit, attempt) =>
            this.deps.logger.info(
              {
                job_id: job.id,
                attempt: job.attempts,
                unit,
                try: attempt + 1,
                max_tries: this.options.retries + 1,
              },
              'adapter call',
            ),
          onCallFailed: (unit, attempt, code) =>
            this.deps.logger.warn(
              { job_id: job.id, attempt: job.attempts, unit, try: attempt + 1, code },
              'adapter call failed',
            ),
          onSnapshot: (time) => {
            if (time && (!snapshotAt || time < snapshotAt)) snapshotAt = time;
          },
          beginCall: async () => state(await store.beginExternalCall(job.id, token)),
          endCall: async () => {
            const r = await store.endExternalCall(job.id, token);
            return r.lost || lease.isLost ? 'lease_lost' : r.cancelRequested ? 'cancel' : 'go';
          },
        },
        {
          unitSize: this.options.unitSize,
          concurrency: this.options.unitConcurrency,
          retries: this.options.retries,
          callTimeoutMs: this.options.callTimeoutMs,
        },
      );
      const t2 = performance.now();
      const done = await store.complete(job.id, token, () => renderResult(phones, outcomes), snapshotAt);
      // Phase timings only: no inputs, no outcomes.
      this.deps.logger.info(
        {
          job_id: job.id,
          inputs: phones.length,
          read_ms: Math.round(t1 - t0),
          check_ms: Math.round(t2 - t1),
          store_ms: Math.round(performance.now() - t2),
        },
        'job executed',
      );
      if (done.kind !== 'lost') {
        this.outcomes.finished(done.job);
        await settlement.settle(done.job);
      } else {
        this.outcomes.stale(job, 'result refused');
      }
      msg.ack();
    } catch (error) {
      // Past a lease without a confirmed renewal, whatever went wrong (a call timed out while the
      // process was stopped) is not this attempt's to record.
      await this.outcomes.afterError(
        job,
        token,
        msg,
        lease.isLost ? new ExecutionStopped('lease_lost') : error,
      );
    } finally {
      lease.stop();
    }
  }
}
