import type { Pool, PoolClient } from '@dnc/kit';
import {
  type BlobBinding,
  type KeyRing,
  openSegment,
  SEGMENT_BYTES,
  sealSegment,
  segmentsOf,
} from '../crypto/envelope.js';
import { BLOB_FORMAT, type BlobFormat, frameSegment, unframeSegment } from '../crypto/segment-codec.js';
import { readSegments } from './segment-copy.js';

/** Segments per read, and decompressing at once. */
const READ_BATCH = 4;
/** Segments compressing at once ahead of the one being sealed: the libuv pool's default size. */
const FRAMING_AHEAD = 4;

/**
 * `work`, observed now: work started ahead and awaited later (or never, when a reader stops) is never an
 * unhandled rejection; whoever awaits it still gets its failure.
 */
function observed<T>(work: Promise<T>): Promise<T> {
  work.catch(() => {});
  return work;
}

/**
 * Encrypted blobs in Postgres: the wrapped data key in `job_blobs`, the sealed segments in
 * `job_blob_segments`. Plaintext never reaches the database.
 *
 * One statement per segment, and the next segment made and sealed while the previous one's INSERT is
 * with PostgreSQL (the client queues, it does not pipeline: one statement in flight at a time). One
 * statement of eight 1 MiB parameters cost more than eight statements (pg's writer grows and copies its
 * buffer per parameter), and sealing no longer waits for the database nor the database for sealing.
 * The header goes first (the segments reference it) with the count and length set once known; all of it
 * runs in the caller's transaction, so nothing is visible before the commit.
 *
 * Each segment is framed (compressed when that makes it smaller, segment-codec.ts) before it is sealed:
 * a 500,000-number input is ~2.3 MB to seal, TOAST and log instead of 8 MB. `bytes` counts plaintext.
 * Framing runs ahead of sealing on several segments at once: the compression of an 8 MB input (eight
 * segments) took 72-84 ms one segment at a time and 35-48 ms four at a time (2 cores, a slow day).
 */
export async function writeBlob(
  client: PoolClient,
  keys: KeyRing,
  binding: BlobBinding,
  pieces: Iterable<string | Buffer>,
  format: BlobFormat = BLOB_FORMAT.framed,
): Promise<{ segments: number; bytes: number }> {
  const { dek, kekId, wrapped } = keys.newDataKey(binding);
  const inFlight = new SegmentWriter(client, binding);
  let segments = 0;
  let bytes = 0;
  try {
    await client.query(
      `INSERT INTO jobs.job_blobs (job_id, kind, kek_id, wrapped_dek, segment_count, byte_length, format)
       VALUES ($1, $2, $3, $4, 0, 0, $5)`,
      [binding.jobId, binding.kind, kekId, wrapped, format],
    );
    // Framed ahead: up to FRAMING_AHEAD segments compress at once on the libuv pool (both cores), while
    // the oldest is sealed and sent. Sealed one behind, so the last one is known and bound as last.
    const framing: Promise<Buffer>[] = [];
    const sealOldest = async (last: boolean) => {
      const body = await (framing.shift() as Promise<Buffer>);
      const seq = segments++;
      return inFlight.write(seq, sealSegment(dek, binding, seq, last, body, format));
    };
    // A framing that fails while an earlier segment is awaited is rethrown by `sealOldest`, in order.
    const frame = (plain: Buffer) =>
      framing.push(observed(format === BLOB_FORMAT.raw ? Promise.resolve(plain) : frameSegment(plain)));
    for (const segment of segmentsOf(pieces)) {
      bytes += segment.length;
      frame(segment);
      if (framing.length > FRAMING_AHEAD) await sealOldest(false);
    }
    if (framing.length === 0) frame(Buffer.alloc(0));
    while (framing.length > 0) await sealOldest(framing.length === 1);
    await inFlight.settled();
  } finally {
    dek.fill(0);
    // Never left running unobserved: its failure (if any) is the transaction's, rolled back by the caller.
    await inFlight.settled().catch(() => {});
  }
  await client.query(
    'UPDATE jobs.job_blobs SET segment_count = $3, byte_length = $4 WHERE job_id = $1 AND kind = $2',
    [binding.jobId, binding.kind, segments, bytes],
  );
  return { segments, bytes };
}

/** At most one segment INSERT in flight; `write` waits for the previous one, then sends the next. */
class SegmentWriter {
  private pending: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly client: PoolClient,
    private readonly binding: BlobBinding,
  ) {}

  async write(seq: number, sealed: Buffer): Promise<void> {
    await this.pending;
    const sent = this.client.query(
      'INSERT INTO jobs.job_blob_segments (job_id, kind, seq, sealed) VALUES ($1, $2, $3, $4)',
      [this.binding.jobId, this.binding.kind, seq, sealed],
    );
    // Observed here so a failure while the next segment is being sealed is never an unhandled rejection;
    // the next `write` or `settled` rethrows it.
    sent.catch(() => {});
    this.pending = sent;
  }

  settled(): Promise<unknown> {
    return this.pending;
  }
}

export class BlobMissing extends Error {
  constructor() {
    super('blob missing');
    this.name = 'BlobMissing';
  }
}

/**
 * The plaintext of a blob, segment by segment, read a few segments at a time so a large result
 * streams instead of being held whole. Throws BlobMissing when the blob is absent, and fails
 * authentication when any segment was altered, moved, or the blob truncated.
 */
export async function* readBlob(
  pool: Pool,
  keys: KeyRing,
  binding: BlobBinding,
  /** Told the blob's plaintext length before its first segment. */
  onHead?: (head: { byteLength: number }) => void,
): AsyncGenerator<Buffer> {
  const head = await pool.query<{
    kek_id: string;
    wrapped_dek: Buffer;
    segment_count: number;
    byte_length: string;
    format: BlobFormat;
  }>(
    `SELECT kek_id, wrapped_dek, segment_count, byte_length, format FROM jobs.job_blobs
     WHERE job_id = $1 AND kind = $2`,
    [binding.jobId, binding.kind],
  );
  const row = head.rows[0];
  if (!row) throw new BlobMissing();
  onHead?.({ byteLength: Number(row.byte_length) });
  // A blob is written with one segment at least (an empty one too); the count is not authenticated, and
  // fewer segments fail the last one's binding, but none would open nothing: an empty blob, not an error.
  if (!(row.segment_count >= 1)) throw new Error('blob header names no segment: damaged or truncated');
  const dek = keys.unwrap(row.kek_id, row.wrapped_dek, binding);
  // A batch fetched ahead may never be awaited (the reader stopped): observed. Read as stored (binary
  // COPY), not as hex text.
  const fetchBatch = (from: number) =>
    observed(readSegments(pool, binding.jobId, binding.kind, from, from + READ_BATCH));
  try {
    // The next batch is fetched while this one is opened, and a batch's segments decompress at once
    // on the libuv pool; they are yielded in order.
    let next = fetchBatch(0);
    for (let from = 0; from < row.segment_count; from += READ_BATCH) {
      const rows = await next;
      if (from + READ_BATCH < row.segment_count) next = fetchBatch(from + READ_BATCH);
      const expected = Math.min(READ_BATCH, row.segment_count - from);
      if (rows.length !== expected) throw new BlobMissing();
      const plains = rows.map((s) => {
        const plain = openSegment(dek, binding, s.seq, s.seq === row.segment_count - 1, s.sealed, row.format);
        return observed(
          row.format === BLOB_FORMAT.raw ? Promise.resolve(plain) : unframeSegment(plain, SEGMENT_BYTES),
        );
      });
      for (const plain of plains) yield await plain;
    }
  } finally {
    dek.fill(0);
  }
}

export async function readBlobWhole(pool: Pool, keys: KeyRing, binding: BlobBinding): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of readBlob(pool, keys, binding)) parts.push(part);
  return Buffer.concat(parts);
}

/** Delete a blob (wrapped key first: without it the segments are unreadable) and verify it is gone. */
export async function purgeBlob(
  db: Pool | PoolClient,
  jobId: string,
  kind: 'input' | 'result',
): Promise<boolean> {
  await db.query('DELETE FROM jobs.job_blobs WHERE job_id = $1 AND kind = $2', [jobId, kind]);
  await db.query('DELETE FROM jobs.job_blob_segments WHERE job_id = $1 AND kind = $2', [jobId, kind]);
  const left = await db.query(
    `SELECT (SELECT count(*) FROM jobs.job_blobs WHERE job_id = $1 AND kind = $2)
          + (SELECT count(*) FROM jobs.job_blob_segments WHERE job_id = $1 AND kind = $2) AS n`,
    [jobId, kind],
  );
  return Number(left.rows[0]?.n ?? 1) === 0;
}

export interface BlobKeyUsage {
  kekId: string;
  /** Input and result blobs not yet purged whose data key this key-encryption key wraps. */
  blobs: number;
  /** The latest time one of them is due to be purged (now at the earliest: they exist now). */
  retainedUntil: Date;
}

/**
 * Blobs not yet purged, by the key-encryption key that wraps their data keys, and when the last of them
 * is due to be purged: its cleanup task's time once its job is terminal (the input at terminalization,
 * the result after its retention), the job's hard cap while it is active (the input goes at
 * terminalization; a result is written under the key active then). A key that wraps no blob and is no
 * longer the active one can be removed from DNC_KEKS, and from then on every copy of the blobs it
 * wrapped (base backups, WAL archives, dead tuples) is unreadable: purged data is shredded, not only
 * deleted. The database's clock, as the purge's.
 */
export async function blobKeyUsage(pool: Pool): Promise<BlobKeyUsage[]> {
  const r = await pool.query<{ kek_id: string; blobs: string; retained_until: Date }>(
    `SELECT b.kek_id, count(*) AS blobs,
            greatest(now(), max(coalesce(
              t.due_at,
              CASE WHEN j.status IN ('queued', 'running') THEN j.hard_cap_at END,
              now()))) AS retained_until
       FROM jobs.job_blobs b
       JOIN jobs.jobs j ON j.id = b.job_id
       LEFT JOIN jobs.cleanup_tasks t ON t.job_id = b.job_id AND t.target = b.kind
      GROUP BY b.kek_id
      ORDER BY b.kek_id`,
  );
  return r.rows.map((x) => ({ kekId: x.kek_id, blobs: Number(x.blobs), retainedUntil: x.retained_until }));
}

/** Blobs not yet purged by key-encryption key, counts only (every scheduler replica, every sweep). */
export async function blobCountsByKey(pool: Pool): Promise<{ kekId: string; blobs: number }[]> {
  const r = await pool.query<{ kek_id: string; blobs: string }>(
    'SELECT kek_id, count(*) AS blobs FROM jobs.job_blobs GROUP BY kek_id',
  );
  return r.rows.map((x) => ({ kekId: x.kek_id, blobs: Number(x.blobs) }));
}
