import type { Client } from '@connectrpc/connect';
import type { jobsv1 } from '@dnc/proto';
import type { Reservations } from './reservations.js';
import type { ClaimStore } from './store/index.js';

export interface UndoDeps {
  claims: ClaimStore;
  reservations: Reservations;
  /** The job scheduler, asked whether a v2 admission's job exists (FenceJob). */
  jobs: Pick<Client<typeof jobsv1.JobsService>, 'fenceJob'>;
}

/**
 * Whether a v2 admission's job can still be given up. Its id fenced (no job of it is stored, and none
 * ever will be): true. Its job stored: the claim is marked accepted and false, for the reservation is
 * that job's and its settlement commits it.
 *
 * Every undo of a v2 admission asks this before it releases. Once a claim is stale, a retry of its key
 * through another replica resumes the same admission, with the same reservation and the same job id
 * (admit.ts, `resume`), and may store the job while the first replica's undo is still on its way. A
 * release then let that job run and settle nothing: its commit answered `released` and nobody was
 * charged (found by a review, 2026-12-05). The claim reconciler has always asked first.
 */
export async function jobGivenUp(deps: UndoDeps, admissionId: string, jobId: string): Promise<boolean> {
  const { fenced } = await deps.jobs.fenceJob({ jobId });
  if (!fenced) await deps.claims.markClaim(admissionId, 'accepted', jobId);
  return fenced;
}

/**
 * A new admission nobody will be answered for, undone: its reservation released (quota keeps a tombstone,
 * so a reserve landing late is refused), then its claim dropped. A v2 one only once its job is given up.
 */
export async function undoAdmission(
  deps: UndoDeps,
  admission: { admissionId: string; kind: 'sync' | 'job'; jobId: string | null },
): Promise<void> {
  const { admissionId, kind, jobId } = admission;
  if (kind === 'job' && jobId && !(await jobGivenUp(deps, admissionId, jobId))) return;
  await deps.reservations.release(admissionId);
  await deps.claims.dropClaim(admissionId);
}
