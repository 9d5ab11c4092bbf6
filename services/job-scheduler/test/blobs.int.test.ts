import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { dropDatabase, uniqueSuffix } from '@dnc/devstack';
import { createPool, ensureDatabase, inTransaction, migrateSchema, type Pool } from '@dnc/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BlobBinding,
  KeyRing,
  openSegment,
  SEGMENT_BYTES,
  sealSegment,
  segmentsOf,
} from '../src/crypto/envelope.js';
import { BLOB_FORMAT } from '../src/crypto/segment-codec.js';
import { readBlob, readBlobWhole, writeBlob } from '../src/store/blobs.js';

// writeBlob against the real PostgreSQL: segments written one per statement while the next one is
// sealed. What is stored reads back byte for byte with the right header; a blob whose pieces fail
// half way leaves nothing behind (the transaction rolls back, no rejection goes unobserved).
const MIGRATIONS = fileURLToPath(new URL('../migrations', import.meta.url));
const base = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
base.pathname = `/dnc_blobs_${uniqueSuffix()}`;
const databaseUrl = base.toString();
const keys = KeyRing.parse(`k1:${Buffer.alloc(32, 7).toString('base64')}`, 'k1');
const MIB = 1 << 20;
let pool: Pool;

async function newJob(): Promise<BlobBinding> {
  const jobId = randomUUID();
  const orgId = randomUUID();
  await pool.query(
    `INSERT INTO jobs.jobs (id, org_id, country, status, submitted_count, reservation_id, hard_cap_at)
     VALUES ($1, $2, 'co', 'queued', 1, $3, now() + interval '1 hour')`,
    [jobId, orgId, randomUUID()],
  );
  return { jobId, orgId, kind: 'input' };
}

async function stored(b: BlobBinding) {
  const head = await pool.query<{ segment_count: number; byte_length: string }>(
    'SELECT segment_count, byte_length FROM jobs.job_blobs WHERE job_id = $1 AND kind = $2',
    [b.jobId, b.kind],
  );
  const segs = await pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM jobs.job_blob_segments WHERE job_id = $1 AND kind = $2',
    [b.jobId, b.kind],
  );
  const row = head.rows[0];
  return row
    ? { segments: row.segment_count, bytes: Number(row.byte_length), rows: segs.rows[0]?.n }
    : { rows: segs.rows[0]?.n };
}

beforeAll(async () => {
  await ensureDatabase(databaseUrl);
  await migrateSchema(databaseUrl, 'jobs', MIGRATIONS);
  pool = createPool(databaseUrl, 2);
});

afterAll(async () => {
  await pool?.end();
  await dropDatabase(databaseUrl);
});

describe('writeBlob (real PostgreSQL)', () => {
  it('a blob of several segments reads back byte for byte; the header counts segments and bytes', async () => {
    const b = await newJob();
    const plain = randomBytes(3 * MIB + 12_345);
    // Pieces of odd sizes, strings and bytes, cut across segment boundaries.
    const pieces = [plain.subarray(0, 700_000), plain.subarray(700_000, 2 * MIB + 5)];
    const tail = plain.subarray(2 * MIB + 5);
    const written = await inTransaction(pool, (c) =>
      writeBlob(c, keys, b, [...pieces, Buffer.from(tail.toString('latin1'), 'latin1')]),
    );
    expect(written).toEqual({ segments: 4, bytes: plain.length });
    expect(await stored(b)).toEqual({ segments: 4, bytes: plain.length, rows: 4 });
    expect((await readBlobWhole(pool, keys, b)).equals(plain)).toBe(true);
  });

  it('an empty blob is one sealed segment; a blob of exactly one segment is one', async () => {
    const empty = await newJob();
    await inTransaction(pool, (c) => writeBlob(c, keys, empty, ['']));
    expect(await stored(empty)).toEqual({ segments: 1, bytes: 0, rows: 1 });
    expect((await readBlobWhole(pool, keys, empty)).length).toBe(0);

    const one = await newJob();
    const plain = randomBytes(MIB);
    await inTransaction(pool, (c) => writeBlob(c, keys, one, [plain]));
    expect(await stored(one)).toEqual({ segments: 1, bytes: MIB, rows: 1 });
    const parts: Buffer[] = [];
    for await (const part of readBlob(pool, keys, one)) parts.push(part);
    expect(Buffer.concat(parts).equals(plain)).toBe(true);
  });

  // Found by a review (2026-12-03): the segment count is the header's, not authenticated; truncated to
  // fewer segments the last one read fails its "last" binding, but a count of 0 opened nothing and read
  // as an empty blob: a result served as an empty 200.
  it('a header cut to fewer segments, or to none, fails to open; never an empty or shorter blob', async () => {
    for (const count of [0, 1]) {
      const b = await newJob();
      await inTransaction(pool, (c) => writeBlob(c, keys, b, [randomBytes(2 * MIB + 1)]));
      await pool.query('UPDATE jobs.job_blobs SET segment_count = $2 WHERE job_id = $1', [b.jobId, count]);
      await pool.query('DELETE FROM jobs.job_blob_segments WHERE job_id = $1 AND seq >= $2', [
        b.jobId,
        count,
      ]);
      await expect(readBlobWhole(pool, keys, b), `${count} segments`).rejects.toThrow(
        /authenticate|no segment/,
      );
    }
  });

  it('pieces that fail half way (segments already sent) leave nothing: the transaction rolls back', async () => {
    const b = await newJob();
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      function* failing() {
        yield randomBytes(2 * MIB + 1);
        throw new Error('render failed');
      }
      await expect(inTransaction(pool, (c) => writeBlob(c, keys, b, failing()))).rejects.toThrow(
        'render failed',
      );
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    expect(unhandled).toEqual([]);
    expect(await stored(b)).toEqual({ rows: 0 });
  });

  it('a segment the database refuses while the next one is sealed fails the write; nothing is left', async () => {
    const b = await newJob();
    // A real refusal of the second segment (seq 1), for this job only.
    await pool.query(`CREATE FUNCTION jobs.refuse_seq_1() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.job_id = '${b.jobId}' AND NEW.seq = 1 THEN RAISE EXCEPTION 'refused' USING ERRCODE = '23514'; END IF;
        RETURN NEW;
      END $$`);
    await pool.query(
      'CREATE TRIGGER refuse BEFORE INSERT ON jobs.job_blob_segments FOR EACH ROW EXECUTE FUNCTION jobs.refuse_seq_1()',
    );
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      await expect(
        inTransaction(pool, (c) => writeBlob(c, keys, b, [randomBytes(4 * MIB)])),
      ).rejects.toMatchObject({ code: '23514' });
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await pool.query('DROP TRIGGER refuse ON jobs.job_blob_segments');
      await pool.query('DROP FUNCTION jobs.refuse_seq_1()');
    }
    expect(unhandled).toEqual([]);
    expect(await stored(b)).toEqual({ rows: 0 });
  });
});

/** Sealed bytes stored for a blob, and its format. */
async function footprint(b: BlobBinding) {
  const r = await pool.query<{ sealed: string; format: number }>(
    `SELECT (SELECT sum(length(sealed)) FROM jobs.job_blob_segments WHERE job_id = $1 AND kind = $2) AS sealed,
            (SELECT format FROM jobs.job_blobs WHERE job_id = $1 AND kind = $2) AS format`,
    [b.jobId, b.kind],
  );
  return { sealed: Number(r.rows[0]?.sealed), format: r.rows[0]?.format };
}

/** A job's input as the gateway sends it: a JSON array of unique numbers (E.164, random subscribers). */
function phoneList(count: number): Buffer {
  const phones = Array.from(
    { length: count },
    (_, i) => `+57300${String((i * 7_919_993) % 10_000_000).padStart(7, '0')}`,
  );
  return Buffer.from(JSON.stringify(phones), 'utf8');
}

/** A blob as writeBlob stored it before compression: format 1, every segment sealed as it is. */
async function writeRaw(b: BlobBinding, plain: Buffer) {
  const { dek, kekId, wrapped } = keys.newDataKey(b);
  const segments = [...segmentsOf([plain])];
  await pool.query(
    `INSERT INTO jobs.job_blobs (job_id, kind, kek_id, wrapped_dek, segment_count, byte_length)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [b.jobId, b.kind, kekId, wrapped, segments.length, plain.length],
  );
  for (const [seq, segment] of segments.entries()) {
    const last = seq === segments.length - 1;
    await pool.query(
      'INSERT INTO jobs.job_blob_segments (job_id, kind, seq, sealed) VALUES ($1, $2, $3, $4)',
      [b.jobId, b.kind, seq, sealSegment(dek, b, seq, last, segment)],
    );
  }
}

describe('segments compressed before sealing (format 2), blobs of format 1 still read', () => {
  it('a list of numbers is stored at under a third of its size and reads back byte for byte', async () => {
    const b = await newJob();
    const plain = phoneList(300_000);
    const written = await inTransaction(pool, (c) => writeBlob(c, keys, b, [plain]));
    expect(written).toEqual({ segments: Math.ceil(plain.length / SEGMENT_BYTES), bytes: plain.length });
    const { sealed, format } = await footprint(b);
    expect(format).toBe(BLOB_FORMAT.framed);
    expect(sealed).toBeLessThan(plain.length / 3);
    expect((await readBlobWhole(pool, keys, b)).equals(plain)).toBe(true);
  });

  it('segments compressed several at once are sealed in order, the last one bound as last', async () => {
    // More segments than are framed ahead (4), of unequal compressibility so they finish out of order,
    // in pieces of odd sizes: the blob opens (each segment's sequence number and last flag are in its
    // associated data) and reads back byte for byte.
    const b = await newJob();
    const list = phoneList(400_000);
    const noise = randomBytes(SEGMENT_BYTES + 777);
    const pieces = [list.subarray(0, 3 * MIB + 1), noise, list.subarray(3 * MIB + 1)];
    const plain = Buffer.concat(pieces);
    const written = await inTransaction(pool, (c) => writeBlob(c, keys, b, pieces));
    expect(written.segments).toBe(Math.ceil(plain.length / SEGMENT_BYTES));
    expect(written.segments).toBeGreaterThan(5);
    expect((await readBlobWhole(pool, keys, b)).equals(plain)).toBe(true);
  });

  it('a reader that stops after the first segment leaves no query, connection or rejection behind', async () => {
    // The next batch is fetched ahead and a batch decompresses at once: a client that goes away after
    // the first chunk of a result must not leave that work unobserved nor hold the pool's connections.
    const b = await newJob();
    const plain = phoneList(400_000);
    await inTransaction(pool, (c) => writeBlob(c, keys, b, [plain]));
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      for (let i = 0; i < 3; i++) {
        for await (const first of readBlob(pool, keys, b)) {
          expect(first.equals(plain.subarray(0, SEGMENT_BYTES))).toBe(true);
          break;
        }
      }
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    expect(unhandled).toEqual([]);
    // The pool (2 connections) has every connection back: the whole blob still reads.
    expect(pool.waitingCount).toBe(0);
    expect((await readBlobWhole(pool, keys, b)).equals(plain)).toBe(true);
  });

  it('incompressible segments are stored as they are (one codec byte more each, never larger)', async () => {
    const b = await newJob();
    const plain = randomBytes(2 * MIB);
    await inTransaction(pool, (c) => writeBlob(c, keys, b, [plain]));
    // nonce 12 + tag 16 + codec byte 1 per segment.
    expect((await footprint(b)).sealed).toBe(plain.length + 2 * 29);
    expect((await readBlobWhole(pool, keys, b)).equals(plain)).toBe(true);
  });

  it('a blob written before compression (format 1, raw segments) reads back as it was written', async () => {
    const b = await newJob();
    const plain = phoneList(100_000);
    await writeRaw(b, plain);
    expect((await footprint(b)).format).toBe(BLOB_FORMAT.raw);
    expect((await readBlobWhole(pool, keys, b)).equals(plain)).toBe(true);
  });

  it('format 1 on request (DNC_JOB_BLOB_FORMAT=1, a rolling upgrade): segments as an older release reads them', async () => {
    const b = await newJob();
    const plain = phoneList(100_000);
    await inTransaction(pool, (c) => writeBlob(c, keys, b, [plain], BLOB_FORMAT.raw));
    expect(await footprint(b)).toEqual({ sealed: plain.length + 2 * 28, format: BLOB_FORMAT.raw });
    // Read as the release before compression did: every segment opened raw is the plaintext.
    const head = await pool.query('SELECT kek_id, wrapped_dek FROM jobs.job_blobs WHERE job_id = $1', [
      b.jobId,
    ]);
    const dek = keys.unwrap(head.rows[0].kek_id, head.rows[0].wrapped_dek, b);
    const segs = await pool.query<{ seq: number; sealed: Buffer }>(
      'SELECT seq, sealed FROM jobs.job_blob_segments WHERE job_id = $1 ORDER BY seq',
      [b.jobId],
    );
    const opened = segs.rows.map((r) => openSegment(dek, b, r.seq, r.seq === segs.rows.length - 1, r.sealed));
    expect(Buffer.concat(opened).equals(plain)).toBe(true);
    expect((await readBlobWhole(pool, keys, b)).equals(plain)).toBe(true);
  });

  it('the format is authenticated: changed in the database either way, the blob fails to open', async () => {
    const framed = await newJob();
    await inTransaction(pool, (c) => writeBlob(c, keys, framed, [phoneList(10_000)]));
    await pool.query('UPDATE jobs.job_blobs SET format = 1 WHERE job_id = $1', [framed.jobId]);
    await expect(readBlobWhole(pool, keys, framed)).rejects.toThrow(/authenticate/);

    const raw = await newJob();
    await writeRaw(raw, phoneList(10_000));
    await pool.query('UPDATE jobs.job_blobs SET format = 2 WHERE job_id = $1', [raw.jobId]);
    await expect(readBlobWhole(pool, keys, raw)).rejects.toThrow(/authenticate/);
  });
});
