import { Batcher, Code, ConnectError, type Logger } from '@dnc/kit';
import type { OpenAdmissions } from './open-admissions.js';
import { CallerGaveUp, requireUuid } from './public-errors.js';
import { jobGivenUp, type UndoDeps } from './undo.js';

/** What a completion keeps of its caller's deadline for the commit's answer and the caller's own. */
const COMMIT_ANSWER_MS = 200;
/** What quota keeps of a commit's time for its answer (its own COMMIT_ANSWER_MS). */
const QUOTA_ANSWER_MS = 100;
/**
 * The least time left a member's commit is tried with: admission's margin, quota's and a commit's. A
 * member with less could not commit (quota refuses it with no time left) and failed the quota call of
 * its whole batch; it now fails alone.
 */
export const COMMIT_MIN_MS = COMMIT_ANSWER_MS + QUOTA_ANSWER_MS + 20;
/** Quota calls of one batch at most: the first, then again without the members whose time ran out. */
const COMMIT_ROUNDS = 3;

/** A completion's commit: when its caller stops waiting, and the account it commits on (its organization). */
interface Member {
  deadline: number;
  account: string;
}

/** One v1 completion waiting for its batch: the admission and when its caller stops waiting. */
interface Completing {
  id: string;
  deadline: number;
}

export interface CompletionDeps extends UndoDeps {
  open: OpenAdmissions;
  logger: Pick<Logger, 'warn'>;
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

  /**
   * The claims of committed completions, marked completed: an answer waits for its marks only so long
   * (markWithin), so they go through their own batches, two statements at most at once. A slow database
   * then holds two of the pool's connections for marks, not one more per batch answered.
   */
  private readonly marks = new Batcher<string, void>(
    async (ids) => {
      await this.deps.claims.markCompleted(ids);
      return ids.map(() => undefined);
    },
    { maxBatch: 1024, maxInFlight: 2 },
  );

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
    const members = new Map<string, Member>();
    items.forEach((item, i) => {
      if (results[i] || claimOf(item.id)?.state === 'completed') return;
      const account = open.orgOf(item.id) ?? `key ${read.get(item.id)?.keyId}`;
      const deadline = Math.min(members.get(item.id)?.deadline ?? Number.POSITIVE_INFINITY, item.deadline);
      members.set(item.id, { deadline, account });
    });
    const failures = await this.commitWithin(members);
    const pending = [...members.keys()];
    ids.forEach((id, i) => {
      const failure = failures.get(id);
      if (!results[i] && failure) results[i] = failure;
    });
    await this.markWithin(
      pending.filter((id) => !failures.get(id)),
      members,
    );
    for (const id of pending) open.delete(id);
    return results;
  }

  /**
   * Mark the claims of committed completions completed, within the time their callers wait. Their commits
   * are done: a mark that fails, or still waits then (admission's PostgreSQL locked or down), never turns
   * a charged request into an error (found by a review, 2026-12-05: answered 503, charged). The claim
   * stays in progress meanwhile; the claim reconciler, or the reclaim of a retry, finds the commit in
   * quota and marks it completed (an exact retry before then is answered 409 in progress, then replayed).
   */
  private async markWithin(ids: string[], members: Map<string, Member>): Promise<void> {
    if (ids.length === 0) return;
    const marking = Promise.all(ids.map((id) => this.marks.submit(id))).then(
      () => true,
      () => false,
    );
    const earliest = Math.min(...ids.map((id) => members.get(id)!.deadline));
    let timer: NodeJS.Timeout | undefined;
    const waited = Number.isFinite(earliest)
      ? new Promise<false>((resolve) => {
          timer = setTimeout(() => resolve(false), Math.max(0, earliest - Date.now() - COMMIT_ANSWER_MS));
        })
      : marking;
    const marked = await Promise.race([marking, waited]);
    clearTimeout(timer);
    if (!marked)
      this.deps.logger.warn(
        { completions: ids.length },
        'completions committed but their claims not marked yet; answered completed, the claim reconciler marks them',
      );
  }

  /**
   * Commit the reservations of `members`, each before its caller stops waiting with time left for its
   * answer and abort, or not at all: never a charge for a request its caller answered with an error.
   * Returns the failure of each id, none for a committed one.
   *
   * One quota call for the batch, bounded by its earliest member; by half of that when the batch spans
   * several organizations, so that a lock held on one organization's account leaves the others time.
   * When a call runs out of its time, its members whose time ran out fail as given up and the rest go
   * again, one call per organization (in parallel): neither a member's deadline nor a lock on its account fails another
   * organization's member (found by a review, 2026-12-05: the whole batch, up to 256 requests, was
   * answered 503 for one). Commits are idempotent, so a call whose answer was lost is repeated safely.
   */
  private async commitWithin(members: Map<string, Member>): Promise<Map<string, Error | undefined>> {
    const failures = new Map<string, Error | undefined>();
    const accounts = new Set([...members.values()].map((m) => m.account));
    let groups = members.size > 0 ? [[...members.keys()]] : [];
    for (let round = 1; groups.length > 0; round++) {
      const share = round === 1 && accounts.size > 1 ? 0.5 : 1;
      const calls = groups.map(async (group) => {
        const earliest = Math.min(...group.map((id) => members.get(id)!.deadline));
        const bound = (earliest - Date.now() - COMMIT_ANSWER_MS) * share;
        const started = Date.now();
        try {
          const committed = await this.deps.reservations.commit(
            group,
            Number.isFinite(bound) ? bound : undefined,
          );
          for (const [id, failure] of committed) failures.set(id, failure);
          return [];
        } catch (error) {
          const now = Date.now();
          const left = group.filter((id) => members.get(id)!.deadline - now >= COMMIT_MIN_MS);
          for (const id of group) if (!left.includes(id)) failures.set(id, new CallerGaveUp());
          // Only a call that ran out of its time (a lock held past it) goes again; one refused at once
          // (quota down, a refusal) is not repeated for every organization of the batch.
          const ranOut = now - started >= 0.9 * (bound - QUOTA_ANSWER_MS);
          if (round < COMMIT_ROUNDS && ranOut) return left;
          const failure = error instanceof Error ? error : new Error(String(error));
          for (const id of left) failures.set(id, failure);
          return [];
        }
      });
      const byAccount = new Map<string, string[]>();
      for (const id of (await Promise.all(calls)).flat()) {
        const account = members.get(id)!.account;
        byAccount.set(account, [...(byAccount.get(account) ?? []), id]);
      }
      groups = [...byAccount.values()];
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
