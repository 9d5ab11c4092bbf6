import { promisify } from 'node:util';
import zlib from 'node:zlib';

const compress = promisify(zlib.brotliCompress);
const decompress = promisify(zlib.brotliDecompress);

/**
 * The layout of a blob's segments (`jobs.job_blobs.format`). `raw`: each sealed segment is the
 * plaintext itself (blobs written before compression). `framed`: each sealed segment is one codec byte
 * and the segment's bytes, compressed when that made them smaller; the codec byte is inside the
 * authenticated ciphertext and the format is bound into each segment's associated data, so neither
 * can be changed in the database without failing authentication.
 */
export const BLOB_FORMAT = { raw: 1, framed: 2 } as const;
export type BlobFormat = (typeof BLOB_FORMAT)[keyof typeof BLOB_FORMAT];

const STORED = 0;
const BROTLI = 1;

/**
 * Brotli at quality 1: a job's input and result are JSON of phone numbers, ~3.5x smaller for 500,000
 * unique random numbers (8 MB to 2.3 MB in 41 ms of CPU, measured on a busy 2-core VM on a slow day),
 * on the libuv pool, beside the event loop. The point is PostgreSQL: every byte is TOASTed in 2 KB chunks and written to the WAL before
 * the job is accepted (v2 admission) and before it succeeds (its result).
 */
/** zlib's output in one chunk of `size` bytes (never below its minimum chunk). */
const oneChunk = (size: number) => Math.max(zlib.constants.Z_MIN_CHUNK, size);

const OPTIONS = (size: number): zlib.BrotliOptions => ({
  // zlib's output arrives in chunks of `chunkSize` (16 KiB by default), one callback and one Buffer each,
  // then concatenated: for a 1 MiB segment, 64 of them on the event loop. One chunk of the segment's
  // size instead: 1 MiB of these lists, compressed 8.7 -> 6.7 ms and decompressed 6.8 -> 4.0 ms, the
  // event loop busy 2.7 -> 0.5 ms per segment decompressed (measured on a slow day of the VM).
  chunkSize: oneChunk(size),
  params: {
    [zlib.constants.BROTLI_PARAM_QUALITY]: 1,
    [zlib.constants.BROTLI_PARAM_SIZE_HINT]: size,
  },
});

/** One segment's plaintext framed for sealing: compressed when smaller, stored as it is otherwise. */
export async function frameSegment(plain: Buffer): Promise<Buffer> {
  const packed = plain.length > 0 ? await compress(plain, OPTIONS(plain.length)) : plain;
  return packed.length < plain.length
    ? Buffer.concat([Buffer.of(BROTLI), packed])
    : Buffer.concat([Buffer.of(STORED), plain]);
}

/** The plaintext of a framed segment; never more than `maxBytes` (the segment size). */
export async function unframeSegment(framed: Buffer, maxBytes: number): Promise<Buffer> {
  const body = framed.subarray(1);
  switch (framed[0]) {
    case STORED:
      return body;
    case BROTLI: {
      const plain = await decompress(body, { maxOutputLength: maxBytes, chunkSize: oneChunk(maxBytes) });
      // A short segment (a blob's last, a small job's only one) is a slice of a chunk of `maxBytes`: a
      // copy of its own, so that a reader holding it (the worker, for the whole job) holds its size only.
      return plain.byteLength * 2 < plain.buffer.byteLength ? Buffer.from(plain) : plain;
    }
    default:
      throw new Error('unknown segment codec');
  }
}
