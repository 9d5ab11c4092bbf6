import { Batcher, Code, ConnectError } from '@dnc/kit';
import type { OpenAdmissions } from './open-admissions.js';
import { CallerGaveUp, requireUuid } from './public-errors.js';
import { jobGivenUp, type UndoDeps } from './undo.js';

/** What a completion keeps of its caller's deadline for the commit's answer and the caller's own. */
const COMMIT_ANSWER_MS = 200;
/**
 * The least time left a member's commit is tried with: admission's margin, quota's (its own
 * COMMIT_ANSWER_MS, 100 ms) and a commit's. A member with less could not commit (quota refuses it with
 * no time left) and failed the quota call of its whole batch; it now fails alone.
 */
export const COMMIT_MIN_MS = COMMIT_ANSWER_MS + 100 + 50;
/** Quota calls of one batch at most: the first, then again without the members whose time ran out. */
const COMMIT_ROUNDS = 3;

/** One v1 completion waiting for its batch: the admission and when its caller stops waiting. */
interface Completing {
  id: string;
  deadline: number;
}

export interface CompletionDeps extends UndoDeps {
  open: OpenAdmissions;
}

/**
 * The end of an admission: Complete (v1 done: quota committed, usage recorded, claim completed), Abort
 * (undone: reservation released, claim dropped; a v2 one once its job is fenced, undo.ts) and ConfirmJob
 * (v2 job stored: claim accepted).
 */
export class Completion {
  /**
   * v1 completions go in batches: the claims of a batch are read in one statement (those not made
   * here), their reservations committed in one quota call and the claims marked completed in one
   * statement. The order per claim is the single call's: commit first, then mark completed.
   */
  private readonly completions = new Batcher<Completing, void>((items) => this.completeMany(items), {
    maxBatch: 256,
    maxInFlight: 2,
    sameTurn: true,
  });

  constructor(private readonly deps: CompletionDeps) {}

  /**
   * Complete one v1 admission, as one item of a completion batch. `deadline` (epoch ms; none: no limit) is
   * when its caller stops waiting: a completion whose commit has not started by then fails
   * DEADLINE_EXCEEDED and commits nothing (its caller answers an error and aborts).
   */
  complete(admissionId: string, deadline = Number.POSITIVE_INFINITY): Promise<void> {
    return this.completions.submit({ id: requireUuid(admissionId, 'admission_id'), deadline });
  }

  private async completeMany(items: Completing[]): Promise<(undefined | Error)[]> {
    const { claims, open } = this.deps;
    const ids = items.map((i) => i.id);
    const unknown = ids.filter((id) => !open.has(id));
    const read = unknown.length > 0 ? await claims.claimsByAdmission(unknown) : new Map();
    const claimOf = (id: string) => (open.has(id) ? { kind: 'sync', state: 'in_progress' } : read.get(id));
    const results: (undefined | Error)[] = ids.map((id) =>
      claimOf(id)?.kind === 'sync'
        ? undefined
        : new ConnectError('no v1 admission in progress with this id', Code.FailedPrecondition),
    );
    // The last moment to give up a commit: a caller past its deadline has answered an error, and one
    // with less than a commit's time left is about to.
    const now = Date.now();
    items.forEach((item, i) => {
      if (!results[i] && claimOf(item.id)?.state !== 'completed' && item.deadline - now < COMMIT_MIN_MS)
        results[i] = new CallerGaveUp();
    });
    const deadlines = new Map<string, number>();
    items.forEach((item, i) => {
      if (results[i] || claimOf(item.id)?.state === 'completed') return;
      deadlines.set(item.id, Math.min(deadlines.get(item.id) ?? Number.POSITIVE_INFINITY, item.deadline));
    });
    const failures = await this.commitWithin(deadlines);
    const pending = [...deadlines.keys()];
    ids.forEach((id, i) => {
      const failure = failures.get(id);
      if (!results[i] && failure) results[i] = failure;
    });
    await claims.markCompleted(pending.filter((id) => !failures.get(id)));
    for (const id of pending) open.delete(id);
    return results;
  }

  /**
   * Commit the reservations of `deadlines` (id -> when its caller stops waiting), each before its caller
   * stops waiting with time left for its answer and abort, or not at all: never a charge for a request
   * its caller answered with an error. A quota call is bounded by its earliest member; when it fails and
   * some members have run out of time meanwhile (that bound, or a lock held on their organization's
   * account past it), those fail as given up and the others are committed by a call of their own: one
   * member never fails another (found by a review, 2026-12-05). Commits are idempotent, so a call whose
   * answer was lost is repeated safely. Returns the failure of each id, none for a committed one.
   */
  private async commitWithin(deadlines: Map<string, number>): Promise<Map<string, Error | undefined>> {
    const failures = new Map<string, Error | undefined>();
    let members = [...deadlines.keys()];
    for (let round = 1; members.length > 0; round++) {
      const earliest = Math.min(...members.map((id) => deadlines.get(id)!));
      try {
        const committed = await this.deps.reservations.commit(
          members,
          Number.isFinite(earliest) ? earliest - Date.now() - COMMIT_ANSWER_MS : undefined,
        );
        for (const [id, failure] of committed) failures.set(id, failure);
        return failures;
      } catch (error) {
        const now = Date.now();
        const left = members.filter((id) => deadlines.get(id)! - now >= COMMIT_MIN_MS);
        if (round >= COMMIT_ROUNDS || left.length === 0 || left.length === members.length) throw error;
        for (const id of members) if (!left.includes(id)) failures.set(id, new CallerGaveUp());
        members = left;
      }
    }
    return failures;
  }

  /**
   * Undo an admission; a completed request or a confirmed job is past the point of no return. Quota
   * decides: when the release answers that the reservation was already committed (Complete committed
   * and then failed to mark the claim, or its answer was lost), the request was completed — the claim
   * is marked completed, never dropped, so a retry of the key replays for free instead of being
   * charged again. If marking fails the abort fails and the claim stays in progress: the reclaim of a
   * retry (or the reconciler) finds the commit the same way. Says whether the request turned out
   * completed (nothing undone), so a v1 caller that holds its result answers it instead of an error.
   */
  async abort(admissionId: string): Promise<{ completed: boolean }> {
    const { claims, open, reservations } = this.deps;
    requireUuid(admissionId, 'admission_id');
    open.delete(admissionId);
    const claim = await claims.claimByAdmission(admissionId);
    if (claim && claim.state !== 'in_progress') return { completed: true };
    // A v2 job its key's retry stored through another replica (undo.ts): the reservation is its job's.
    if (claim?.kind === 'job' && claim.jobId && !(await jobGivenUp(this.deps, admissionId, claim.jobId)))
      return { completed: true };
    const released = await reservations.release(admissionId);
    if (released.committed) {
      if (claim) await claims.markClaim(admissionId, claim.kind === 'job' ? 'accepted' : 'completed');
      return { completed: true };
    }
    await claims.dropClaim(admissionId);
    return { completed: false };
  }

  /** The v2 claim of `admissionId` accepted: its job `jobId` is stored. */
  async confirmJob(admissionId: string, jobId: string): Promise<void> {
    requireUuid(admissionId, 'admission_id');
    requireUuid(jobId, 'job_id');
    const claim = await this.deps.claims.claimByAdmission(admissionId);
    if (claim?.kind !== 'job' || claim.jobId !== jobId)
      throw new ConnectError('no job admission with this id', Code.NotFound);
    if (claim.state !== 'accepted') await this.deps.claims.markClaim(admissionId, 'accepted', jobId);
  }
}
