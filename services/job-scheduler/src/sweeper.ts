import { JOB_STATUSES } from '@dnc/api-contract/limits';
import type { Logger, Pool } from '@dnc/kit';
import type { KeyRing } from './crypto/envelope.js';
import { blobsWithoutKey } from './crypto/key-status.js';
import type { Dispatcher } from './dispatch.js';
import type { JobMetrics } from './metrics.js';
import { settleInTurn, UNANSWERED_PER_TICK } from './settle-in-turn.js';
import type { QuotaSettlement } from './settlement.js';
import { blobCountsByKey } from './store/blobs.js';
import type { CleanupStore } from './store/cleanup.js';
import type { JobRow, JobStore } from './store/jobs.js';
import type { SweepLease } from './store/sweep-lease.js';

export interface SweeperDeps {
  pool: Pool;
  /** The turn: one replica sweeps at a time; the others skip the tick. */
  lease: SweepLease;
  store: JobStore;
  cleanup: CleanupStore;
  /** The scheduler's key ring: blobs whose key it lacks are counted and logged. */
  keys: KeyRing;
  dispatcher: Dispatcher;
  settlement: QuotaSettlement;
  metrics: JobMetrics;
  logger: Logger;
  intervalMs: number;
  redispatchAfterMs: number;
  /** Fenced job ids are kept this long (the idempotency retention), then purged. */
  fenceRetentionSeconds: number;
}

/**
 * The API role's background work, each tick: expire jobs past the hard cap, complete cancels whose
 * worker vanished, re-dispatch jobs whose work message may be missing, retry quota settlements and
 * retention tasks, purge fences past the idempotency retention, and refresh the gauges. Every step is idempotent; a failed step is logged and
 * retried on the next tick.
 */
export class Sweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private retentionApplied = false;
  /** The ids of the keys blobs need and the ring lacks, as last logged. */
  private missingKeys = '';
  /**
   * Settlements quota may still leave unanswered in this tick; none left, the rest wait for the next tick. A
   * quota that hangs instead of refusing holds each call for its whole deadline (5 s), and every step behind
   * it (cleanup of inputs and results, the next hard caps, the turn's renewal) would wait for all of them.
   */
  private unansweredLeft = UNANSWERED_PER_TICK;

  constructor(private readonly deps: SweeperDeps) {}

  start(): void {
    const loop = () => {
      if (this.stopped) return;
      this.running = this.tick().finally(() => {
        this.running = undefined;
        if (!this.stopped) this.timer = setTimeout(loop, this.deps.intervalMs);
      });
    };
    this.timer = setTimeout(loop, Math.min(this.deps.intervalMs, 500));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  async tick(): Promise<void> {
    try {
      if (await this.deps.lease.hold()) {
        this.unansweredLeft = UNANSWERED_PER_TICK;
        try {
          await this.sweepSteps();
        } finally {
          await this.deps.lease.release().catch(() => {});
        }
      }
      // Every replica, turn or not: the blobs its own key ring cannot open (each pod has its own DNC_KEKS,
      // and a gauge left by a replica that lost the turn would never clear).
      await this.step('key gauge', () => this.keyGauge());
    } catch (error) {
      this.deps.logger.warn({ err: error }, 'sweep skipped: database unavailable');
    }
  }

  /** The tick's steps in order, the turn renewed before each: once another replica holds it, the rest wait. */
  private async sweepSteps(): Promise<void> {
    const steps: [string, () => Promise<void>][] = [
      ['hard cap', () => this.expire()],
      ['stale cancels', () => this.staleCancels()],
      ['dispatch', () => this.redispatch()],
      ['quota settlement', () => this.settle()],
      ['cleanup', () => this.cleanupDue()],
      ['fences', () => this.purgeFences()],
      ['gauges', () => this.gauges()],
    ];
    // Once per process (the periods are read at start): shortened periods applied to stored jobs.
    if (!this.retentionApplied) steps.unshift(['retention periods', () => this.applyRetention()]);
    for (const [i, [name, work]] of steps.entries()) {
      if (i > 0 && !(await this.deps.lease.hold())) {
        this.deps.logger.warn({ step: name }, 'sweep turn lapsed and taken by another replica; tick left');
        return;
      }
      await this.step(name, work);
    }
  }

  private async step(name: string, work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (error) {
      this.deps.logger.warn({ step: name, err: error }, 'sweep step failed; retried next tick');
    }
  }

  private observeTerminal(jobs: JobRow[]): void {
    for (const j of jobs) {
      this.deps.metrics.duration.observe({ state: j.status }, (Date.now() - j.createdAt.getTime()) / 1000);
    }
  }

  /** A job a sweep could not end: logged (its id and the error's kind), tried again at the next sweep. */
  private readonly endFailed = (jobId: string, error: unknown) =>
    this.deps.logger.warn(
      { job_id: jobId, err: error },
      'job not ended by the sweep; tried again at the next',
    );

  private async applyRetention(): Promise<void> {
    const changed = await this.deps.store.sweeps.applyRetention();
    this.retentionApplied = true;
    if (changed.hardCaps || changed.purges)
      this.deps.logger.info(
        { hard_caps: changed.hardCaps, purges: changed.purges },
        'shortened retention periods applied to stored jobs',
      );
    if (changed.graces)
      this.deps.logger.info(
        { purges: changed.graces },
        "result purges moved to the end of their downloads' grace past retention",
      );
  }

  private async expire(): Promise<void> {
    const expired = await this.deps.store.sweeps.expireOverdue(100, undefined, this.endFailed);
    this.observeTerminal(expired);
    for (const job of expired) this.deps.logger.info({ job_id: job.id }, 'job expired at the hard cap');
    await this.settleAll(expired);
  }

  private async staleCancels(): Promise<void> {
    const done = await this.deps.store.sweeps.reconcileStaleCancels(100, this.endFailed);
    this.observeTerminal(done);
    await this.settleAll(done);
  }

  private async redispatch(): Promise<void> {
    const missing = new Map<string, number>();
    for (const job of await this.deps.store.sweeps.dispatchCandidates(this.deps.redispatchAfterMs)) {
      // A queued job whose publish was confirmed is normally waiting its turn: published again only when
      // its country's queue holds fewer messages than the jobs that need one (a message spent by
      // `max_deliver`, or lost), the oldest such jobs first. Found by a review (2026-12-04): it was only
      // when the queue was empty, which under load it never is, and the job expired at its hard cap. A
      // job whose message was in fact live gets a second one, which its worker acknowledges unrun.
      if (job.status === 'queued' && job.dispatchedAt) {
        if (!missing.has(job.country)) missing.set(job.country, await this.messagesMissing(job.country));
        const left = missing.get(job.country)!;
        if (left <= 0) continue;
        missing.set(job.country, left - 1);
      }
      // Not confirmed (NATS away or hung, 2 s each): the rest wait for the next tick, as settlements do.
      if (!(await this.deps.dispatcher.dispatch(job))) return;
    }
  }

  /**
   * How many of a country's jobs lack a live work message: those that need one less the messages its
   * queue holds, read first (a job published and recorded in between is counted as needing one: at worst
   * one more message, never one fewer). None when the queue cannot be read.
   */
  private async messagesMissing(country: string): Promise<number> {
    const live = await this.deps.dispatcher.liveMessages(country);
    if (live === undefined) return 0;
    return (await this.deps.store.sweeps.needingMessages(country)) - live;
  }

  private async settle(): Promise<void> {
    await this.settleAll(await this.deps.store.sweeps.unsettled());
  }

  /** Settle in turn (`settleInTurn`: who waits after a failure), within the tick's budget of unanswered calls. */
  private async settleAll(jobs: JobRow[]): Promise<void> {
    if (this.unansweredLeft <= 0) return;
    // Only calls to quota tell anything: a job with nothing to settle is passed over.
    const due = jobs.filter((job) => job.quotaSettlement && !job.quotaSettledAt);
    if (due.length === 0) return;
    const sweeps = this.deps.store.sweeps;
    const base = this.deps.intervalMs;
    this.unansweredLeft = await settleInTurn(due, await sweeps.settleBackoffs(), this.unansweredLeft, {
      keepTurn: () => this.deps.lease.keep(),
      settle: (job) => this.deps.settlement.settle(job),
      waitJob: (job) => sweeps.deferJobSettlement(job.id, base),
      waitAccount: (job) => sweeps.deferSettlements(job, base),
      hold: (job, spentMs) => sweeps.holdSettlements(job, 2 * base + spentMs),
      answeredAccount: (job) => sweeps.clearSettleBackoff(job),
    });
  }

  private async cleanupDue(): Promise<void> {
    for (const task of await this.deps.cleanup.due()) {
      let done = false;
      let errorClass = 'target still present after purge';
      try {
        done = await this.deps.cleanup.run(task);
      } catch (error) {
        errorClass = `${(error as { code?: string }).code ?? (error as Error).name ?? 'error'}`;
      }
      if (!done) {
        this.deps.metrics.cleanupFailures.inc({ target: task.target });
        this.deps.logger.warn(
          { job_id: task.jobId, target: task.target, error: errorClass },
          'cleanup failed',
        );
        await this.deps.cleanup.recordFailure(task, errorClass).catch(() => {});
      }
    }
  }

  private async purgeFences(): Promise<void> {
    // With them, the waits of settlements that passed long ago (an organization id each).
    await this.deps.store.sweeps.forgetSettleBackoffs();
    const purged = await this.deps.store.sweeps.purgeFences(this.deps.fenceRetentionSeconds);
    if (purged > 0) this.deps.logger.info({ purged }, 'fenced job ids past the idempotency retention purged');
  }

  private async gauges(): Promise<void> {
    const { states, nearHardCap } = await this.deps.store.sweeps.countsByState();
    for (const s of JOB_STATUSES) this.deps.metrics.jobs.set({ state: s }, states[s] ?? 0);
    this.deps.metrics.nearHardCap.set(nearHardCap);
    const status = await this.deps.cleanup.status(1);
    this.deps.metrics.cleanupPending.set(status.pending);
  }

  private async keyGauge(): Promise<void> {
    const missing = blobsWithoutKey(this.deps.keys, await blobCountsByKey(this.deps.pool));
    this.deps.metrics.blobsWithoutKey.set(missing.blobs);
    // Logged when the set of missing keys changes, not every sweep.
    const seen = missing.kekIds.join(',');
    if (seen !== this.missingKeys) {
      this.missingKeys = seen;
      if (missing.blobs > 0)
        this.deps.logger.error(
          { kek_ids: missing.kekIds, blobs: missing.blobs },
          'job blobs wrapped by key-encryption keys not in DNC_KEKS: they cannot be opened until the keys are restored',
        );
    }
  }
}
