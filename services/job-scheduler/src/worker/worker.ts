import type { NatsConnection } from '@dnc/kit';
import {
  extractTraceContext,
  inSpan,
  isDependencyOutage,
  isWellFormedRequestId,
  REQUEST_ID_HEADER,
  runWithRequestId,
  SpanKind,
} from '@dnc/kit';
import type { Consumer, JsMsg } from '@nats-io/jetstream';
import type { WorkMessage } from '../dispatch.js';
import { backoffMs } from '../domain/failures.js';
import type { JobMetrics } from '../metrics.js';
import type { JobStore } from '../store/jobs.js';
import { type AttemptDeps, type AttemptOptions, runAttempt } from './attempt.js';
import { jobConsumers } from './consumers.js';
import { jobMemoryCost, MemoryBudget } from './memory.js';
import { AttemptOutcomes } from './outcome.js';

/** How long a message whose job could not be read waits before it is tried again. */
const RETRY_LATER_MS = 2_000;

/**
 * PostgreSQL could not be reached (or dropped the connection, or has no room): what a retry in place waits
 * out. A statement that ran out of time (57014) or of lock wait (55P03) is not: PostgreSQL answers, and a
 * job whose claim always waits behind a stuck row lock would be held for good.
 */
function unreachable(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return isDependencyOutage(error) && code !== '57014' && code !== '55P03';
}

export interface WorkerOptions extends AttemptOptions {
  prefix: string;
  countries: string[];
  jobConcurrency: number;
  maxDeliver: number;
  maxAttempts: number;
  /** Bytes of V8 heap the jobs of this process may hold at once (jobMemoryCost each). */
  memoryBudgetBytes: number;
}

export interface WorkerDeps extends AttemptDeps {
  nc: NatsConnection;
  metrics: JobMetrics;
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
    for (const consumer of await jobConsumers(this.deps.nc, this.options)) {
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
    while ((await this.handleOnce(jobId, msg, abort)) === 'again') {}
  }

  /** One try at the job of a message: `again` when the message is kept and the job tried again here. */
  private async handleOnce(jobId: string, msg: JsMsg, abort: AbortController): Promise<'settled' | 'again'> {
    // Memory first: a job that does not fit waits here, unclaimed, and burns no attempt.
    let release: () => void;
    try {
      release = await this.admitMemory(jobId, msg, abort.signal);
    } catch (error) {
      if (abort.signal.aborted) {
        msg.nak();
        return 'settled';
      }
      this.deps.logger.warn({ job_id: jobId, err: error }, 'job size unknown; message will be redelivered');
      return this.retryLater(msg, error, abort.signal);
    }
    try {
      return await this.claimAndRun(jobId, msg, abort);
    } finally {
      release();
    }
  }

  /**
   * A job not claimed yet whose size or claim could not be read: its message is handed back for a later
   * delivery, or, on its last delivery with PostgreSQL unreachable, kept (marked in progress) and the job
   * tried again here until PostgreSQL answers. JetStream delivers a message at most `max_deliver` times,
   * and the job stays `queued` with its dispatch confirmed: past its last delivery it was never delivered
   * again, and the sweeper published such a job again only when its country's queue was empty, which under
   * load it rarely is (found by a review, 2026-12-04: an outage of ~20-50 s lost the queued jobs; they
   * expired at the hard cap; the sweeper now also counts the messages missing, sweeper.ts `redispatch`). Another failure (a statement out of time included) keeps the bound: a job
   * that cannot be read is not held for good, nor its country's queue kept looking busy to the sweeper. A
   * stop hands the message back (the sweeper's path then).
   */
  private async retryLater(msg: JsMsg, error: unknown, signal: AbortSignal): Promise<'settled' | 'again'> {
    if (msg.info.deliveryCount < this.options.maxDeliver || !unreachable(error) || signal.aborted) {
      msg.nak(RETRY_LATER_MS);
      return 'settled';
    }
    const keepAlive = () => {
      try {
        msg.working();
      } catch {
        // NATS reconnecting: the message may be redelivered, never twice run (the claim's lease).
      }
    };
    keepAlive();
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.min(RETRY_LATER_MS, this.options.ackWaitMs / 2));
      signal.addEventListener('abort', done);
    });
    if (signal.aborted) {
      msg.nak();
      return 'settled';
    }
    keepAlive();
    return 'again';
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

  private async claimAndRun(jobId: string, msg: JsMsg, abort: AbortController): Promise<'settled' | 'again'> {
    const { store, metrics, settlement } = this.deps;
    let claim: Awaited<ReturnType<JobStore['claim']>>;
    const grantedAt = performance.now();
    try {
      claim = await store.claim(jobId, this.options.leaseMs, this.options.maxAttempts);
    } catch (error) {
      this.deps.logger.warn({ job_id: jobId, err: error }, 'claim failed; message will be redelivered');
      return this.retryLater(msg, error, abort.signal);
    }
    switch (claim.kind) {
      case 'gone':
      case 'terminal':
        msg.ack();
        return 'settled';
      case 'held':
        // Another worker holds a live lease: look again when it would have expired.
        msg.nak(claim.retryInMs + 500);
        return 'settled';
      case 'terminalized':
        this.outcomes.finished(claim.job);
        await settlement.settle(claim.job);
        msg.ack();
        return 'settled';
      case 'claimed':
        break;
    }
    const { job, token } = claim;
    if (job.attempts === 1 && job.startedAt)
      metrics.dispatchLag.observe(Math.max(0, (job.startedAt.getTime() - job.createdAt.getTime()) / 1000));
    this.deps.logger.info({ job_id: job.id, attempt: job.attempts }, 'job started');
    await runAttempt(
      { deps: this.deps, options: this.options, outcomes: this.outcomes },
      { job, token },
      msg,
      abort,
      grantedAt,
    );
    return 'settled';
  }
}
