import { inTransaction, type Pool, type PoolClient } from '@dnc/kit';
import type { KeyRing } from '../crypto/envelope.js';
import type { BlobFormat } from '../crypto/segment-codec.js';
import type { RetentionPolicy } from '../domain/states.js';
import { purgeBlob, writeBlob } from './blobs.js';
import type { JobRow } from './job-row.js';
import { expireIfPastCap, lockLeased, terminalizeLocked } from './terminalize.js';

/**
 * How a job's final write ended: `ended` when the job reached its end elsewhere meanwhile (a cancel, the
 * hard cap's sweep), `lost` when another worker holds its lease or it is gone.
 */
export type FinalWrite =
  | { kind: 'succeeded' | 'cancelled' | 'expired'; job: JobRow }
  | { kind: 'lost' }
  | { kind: 'ended' };

interface Store {
  pool: Pool;
  keys: KeyRing;
  policy: RetentionPolicy;
  blobFormat: BlobFormat;
}

/** The job ended, or its lease passed to another worker, while its result was written. */
class ResultRefused extends Error {
  constructor(readonly ended: boolean) {
    super('result refused');
  }
}

/**
 * A job's final write: the encrypted result, input purge, `succeeded`, quota marked for commit, in one
 * transaction and only under the current lease. A cancel requested meanwhile wins: the result is
 * discarded and the job becomes `cancelled`; a result after the hard cap is discarded and the job is
 * `expired`.
 *
 * The result is written before the job's row is locked. Its rows' foreign key takes only a KEY SHARE
 * lock on the job's row, which a cancel's FOR NO KEY UPDATE does not wait for: a cancel that comes
 * during the write (seconds for 25 MiB) is answered at once, as the spec's cancel with "no external
 * call in progress" is, and the write, finding the job no longer running under its lease, rolls back.
 * Found by a review (2026-12-05): the row was locked first, so such a cancel waited for the write, then
 * found the job `succeeded` and charged (answered 503 when the write took more than 5 s).
 */
export async function writeFinal(
  store: Store,
  jobId: string,
  token: string,
  resultPieces: () => Iterable<string | Buffer>,
  registrySnapshotAt?: Date,
): Promise<FinalWrite> {
  const before = await endingWithoutResult(store, jobId, token);
  if (before.kind !== 'write') return before;
  try {
    return await inTransaction(store.pool, async (client) => {
      const binding = { jobId, orgId: before.orgId, kind: 'result' as const };
      await writeBlob(client, store.keys, binding, resultPieces(), store.blobFormat);
      const job = await lockLeased(client, jobId, token);
      if (!job) throw new ResultRefused(await endedElsewhere(client, jobId));
      return endWritten(client, store.policy, job, registrySnapshotAt);
    });
  } catch (error) {
    if (error instanceof ResultRefused) return { kind: error.ended ? 'ended' : 'lost' };
    throw error;
  }
}

/** The locked job once its result is written: past the cap or cancelled meanwhile, the result goes. */
async function endWritten(
  client: PoolClient,
  policy: RetentionPolicy,
  job: JobRow,
  registrySnapshotAt: Date | undefined,
): Promise<FinalWrite> {
  // Writing 25 MiB takes seconds: the cap is judged once it is written, and a result that came after
  // it is discarded with the rest (found by a review, 2026-12-03: it was kept).
  const late = await expireIfPastCap(client, policy, job);
  if (late) {
    await purgeBlob(client, job.id, 'result');
    return { kind: 'expired', job: late };
  }
  if (job.cancelRequested) {
    await purgeBlob(client, job.id, 'result');
    return { kind: 'cancelled', job: await cancelLocked(client, policy, job) };
  }
  if (registrySnapshotAt) {
    await client.query('UPDATE jobs.jobs SET registry_snapshot_at = $2 WHERE id = $1', [
      job.id,
      registrySnapshotAt,
    ]);
  }
  const done = await terminalizeLocked(client, policy, job, {
    to: 'succeeded',
    note: 'every unit completed',
  });
  return { kind: 'succeeded', job: done };
}

/**
 * Before a result is written, one read without a lock: the job's ending when it has one without its
 * result (its lease gone, past its cap, a cancel requested), so that no result is sealed for nothing.
 */
async function endingWithoutResult(
  store: Store,
  jobId: string,
  token: string,
): Promise<FinalWrite | { kind: 'write'; orgId: string }> {
  const r = await store.pool.query<{ org_id: string; cancel_requested: boolean; past: boolean }>(
    `SELECT org_id, cancel_requested, hard_cap_at <= clock_timestamp() AS past FROM jobs.jobs
     WHERE id = $1 AND lease_token = $2 AND status = 'running'`,
    [jobId, token],
  );
  const seen = r.rows[0];
  if (!seen) return { kind: 'lost' };
  if (!seen.cancel_requested && !seen.past) return { kind: 'write', orgId: seen.org_id };
  const ending = await inTransaction(store.pool, async (client): Promise<FinalWrite | undefined> => {
    const job = await lockLeased(client, jobId, token);
    if (!job) return { kind: 'lost' };
    const expired = await expireIfPastCap(client, store.policy, job);
    if (expired) return { kind: 'expired', job: expired };
    return job.cancelRequested
      ? { kind: 'cancelled', job: await cancelLocked(client, store.policy, job) }
      : undefined;
  });
  return ending ?? { kind: 'write', orgId: seen.org_id };
}

async function endedElsewhere(client: PoolClient, jobId: string): Promise<boolean> {
  const r = await client.query<{ ended: boolean }>(
    `SELECT status NOT IN ('queued', 'running') AS ended FROM jobs.jobs WHERE id = $1`,
    [jobId],
  );
  return r.rows[0]?.ended ?? false;
}

function cancelLocked(client: PoolClient, policy: RetentionPolicy, job: JobRow): Promise<JobRow> {
  return terminalizeLocked(client, policy, job, { to: 'cancelled', note: 'cancelled; result discarded' });
}
