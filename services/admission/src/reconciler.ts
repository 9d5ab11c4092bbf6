import type { Client } from '@connectrpc/connect';
import type { Logger } from '@dnc/kit';
import type { jobsv1 } from '@dnc/proto';
import type { Timeouts } from './domain/idempotency.js';
import type { Reservations } from './reservations.js';
import type { ClaimStore } from './store/index.js';
import { jobGivenUp } from './undo.js';

export interface Reconciled {
  /** v2: the job was stored; its claim accepted (the job settles its reservation). */
  confirmed: number;
  /** v2: no job, its id fenced; reservation released, claim dropped (the key is free again). */
  givenUp: number;
  /** v1: the reservation had been committed; the claim marked completed (a retry replays free). */
  completed: number;
  /** v1: not committed; reservation released (if quota had not already), claim dropped. */
  dropped: number;
}

/**
 * Every admission ends in commit or release within a bound (issue 14): an idempotency claim still in
 * progress past its timeout belongs to a caller that gave up, timed out or died between the claim and
 * its last step, and nobody else will finish it. Every interval, each such claim is resolved from the
 * stores, never guessed:
 *
 *   v2 (after DNC_JOB_CLAIM_TIMEOUT_SECONDS)  JobsService.FenceJob: the job exists -> claim accepted
 *                                             (a retry replays it; the job settles the reservation);
 *                                             no job -> its id fenced (a SubmitJob still on its way is
 *                                             refused), reservation released, claim dropped
 *   v1 (after DNC_SYNC_CLAIM_TIMEOUT_SECONDS)  quota Release: committed -> claim completed (charged
 *                                             once, a retry replays free); else claim dropped
 *
 * A retry of the key in the meantime resumes or reclaims the claim itself (admit.ts); both paths are
 * idempotent against each other. A claim whose resolution fails (the scheduler or quota down) is tried
 * again next interval, with the rest of its kind. Several replicas may run this at once: every step is idempotent.
 */
/** Passes a claim whose resolution failed sits out: doubling from 2 per failure, at most this many. */
const MAX_SIT_OUT_PASSES = 32;

export class ClaimReconciler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<Reconciled> | undefined;
  private passes = 0;
  /**
   * Claims whose resolution failed: how often in a row, and the pass they are tried again from. Left out
   * of the read until then, so one claim that fails on its own data (its job's lock held, its account
   * row locked) does not stay the oldest and stop its kind every pass (found by a review, 2026-12-05; as
   * quota's sweeper does).
   */
  private readonly sittingOut = new Map<string, { failures: number; from: number }>();

  constructor(
    private readonly deps: {
      claims: ClaimStore;
      reservations: Reservations;
      jobs: Client<typeof jobsv1.JobsService>;
      logger: Logger;
      timeouts: Timeouts;
    },
    private readonly intervalMs: number,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.reconcileOnce(), this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  reconcileOnce(): Promise<Reconciled> {
    if (this.running) return this.running;
    this.running = this.pass().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async pass(): Promise<Reconciled> {
    const { claims, logger, timeouts } = this.deps;
    const done: Reconciled = { confirmed: 0, givenUp: 0, completed: 0, dropped: 0 };
    const pass = ++this.passes;
    const excluded: string[] = [];
    for (const [id, s] of this.sittingOut) {
      if (s.from > pass) excluded.push(id);
      else if (s.from + 2 * MAX_SIT_OUT_PASSES < pass) this.sittingOut.delete(id);
    }
    let stale: Awaited<ReturnType<ClaimStore['staleClaims']>> = [];
    try {
      stale = await claims.staleClaims(
        timeouts.jobClaimMs / 1000,
        timeouts.syncClaimMs / 1000,
        100,
        excluded,
      );
    } catch (error) {
      logger.warn({ err: error }, 'claim reconciliation failed to read claims; retrying next interval');
      return done;
    }
    // After a claim of a kind fails (the scheduler, or quota, down), the others of that kind wait for the
    // next pass: each would wait its own call's timeout (FenceJob's 3 s) for the same answer, and a pass of
    // a hundred took minutes (found by a review, 2026-12-05). The failed claim sits out a few passes, so
    // the next pass tries another.
    const failedKinds = new Set<string>();
    for (const claim of stale) {
      const kind = claim.kind === 'job' && claim.jobId ? 'job' : 'sync';
      if (failedKinds.has(kind)) continue;
      try {
        const outcome =
          kind === 'job'
            ? await this.resolveJob(claim.admissionId, claim.jobId!)
            : await this.resolveSync(claim.admissionId);
        done[outcome]++;
        this.sittingOut.delete(claim.admissionId);
      } catch (error) {
        failedKinds.add(kind);
        const failures = (this.sittingOut.get(claim.admissionId)?.failures ?? 0) + 1;
        const sitOut = Math.min(2 ** failures, MAX_SIT_OUT_PASSES);
        this.sittingOut.set(claim.admissionId, { failures, from: pass + sitOut });
        logger.warn(
          { err: error, kind, admissionId: claim.admissionId, sitOutPasses: sitOut },
          'an unresolved admission could not be reconciled; its kind retried next interval',
        );
      }
    }
    if (done.confirmed + done.givenUp + done.completed + done.dropped > 0)
      logger.warn({ ...done }, 'reconciled admissions left unresolved by their caller');
    return done;
  }

  private async resolveJob(admissionId: string, jobId: string): Promise<keyof Reconciled> {
    if (!(await jobGivenUp(this.deps, admissionId, jobId))) return 'confirmed';
    const { claims, reservations } = this.deps;
    await reservations.release(admissionId);
    await claims.dropClaim(admissionId);
    return 'givenUp';
  }

  private async resolveSync(admissionId: string): Promise<keyof Reconciled> {
    const { claims, reservations } = this.deps;
    const released = await reservations.release(admissionId);
    if (released.committed) {
      await claims.markClaim(admissionId, 'completed');
      return 'completed';
    }
    await claims.dropClaim(admissionId);
    return 'dropped';
  }
}
