import { boundedCopy, type Pool, QUERY_TIMEOUT_MS } from '@dnc/kit';
import { to as copyTo } from 'pg-copy-streams';

export interface SealedSegment {
  seq: number;
  sealed: Buffer;
}

/** The signature that opens PostgreSQL's binary COPY format. */
const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

/**
 * Sealed segments [from, to) of one blob, in order, read with `COPY ... TO STDOUT (FORMAT binary)`:
 * the bytes as they are stored. A SELECT answers `bytea` as hex text, which node-postgres receives as
 * a string twice the size and decodes back: 52 ms of wall time and 41 ms of this process's CPU for a
 * batch of 4 sealed segments (2.8 MB) on this machine, against 5 and 4 ms this way.
 *
 * COPY takes no parameters: the job id and kind are quoted by the driver (`escapeLiteral`), the bounds
 * are checked integers. A connection that failed in the middle of a COPY is not given back to the pool.
 */
export async function readSegments(
  pool: Pool,
  jobId: string,
  kind: 'input' | 'result',
  from: number,
  to: number,
): Promise<SealedSegment[]> {
  if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to))
    throw new Error('segment bounds must be integers');
  const client = await pool.connect();
  let failed = false;
  try {
    const sql = `COPY (SELECT seq, sealed FROM jobs.job_blob_segments
       WHERE job_id = ${client.escapeLiteral(jobId)} AND kind = ${client.escapeLiteral(kind)}
         AND seq >= ${from} AND seq < ${to} ORDER BY seq) TO STDOUT (FORMAT binary)`;
    const chunks: Buffer[] = [];
    for await (const chunk of client.query(boundedCopy(copyTo(sql), QUERY_TIMEOUT_MS)))
      chunks.push(chunk as Buffer);
    return binaryCopyRows(Buffer.concat(chunks));
  } catch (error) {
    failed = true;
    throw error;
  } finally {
    client.release(failed);
  }
}

/**
 * The rows of a binary COPY of (`seq` integer, `sealed` bytea): PostgreSQL's documented format (the
 * signature, flags, a header extension, then per row a field count and each field's length and bytes,
 * then -1). Each `sealed` is a view of `data`. Anything else is refused, never guessed at.
 */
export function binaryCopyRows(data: Buffer): SealedSegment[] {
  if (data.length < 19 || !data.subarray(0, SIGNATURE.length).equals(SIGNATURE))
    throw new Error('not a binary COPY stream');
  // Bits 0-15 flag an incompatible format and bit 16 rows with OIDs: neither is read here.
  if ((data.readUInt32BE(11) & 0x1ffff) !== 0) throw new Error('a binary COPY stream of another format');
  let at = 19 + data.readUInt32BE(15);
  const field = () => {
    const length = data.readInt32BE(at);
    at += 4;
    if (length < 0 || at + length > data.length) throw new Error('a binary COPY field is NULL or cut short');
    at += length;
    return data.subarray(at - length, at);
  };
  const rows: SealedSegment[] = [];
  for (;;) {
    const fields = data.readInt16BE(at);
    at += 2;
    if (fields === -1) break;
    if (fields !== 2) throw new Error('a binary COPY row of segments has two fields');
    const seq = field();
    if (seq.length !== 4) throw new Error('a segment number is a 4-byte integer');
    rows.push({ seq: seq.readInt32BE(0), sealed: field() });
  }
  if (at !== data.length) throw new Error('a binary COPY stream goes on after its end');
  return rows;
}
