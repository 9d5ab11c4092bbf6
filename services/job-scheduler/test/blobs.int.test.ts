import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { dropDatabase, uniqueSuffix } from '@dnc/devstack';
import { createPool, ensureDatabase, inTransaction, migrateSchema, type Pool } from '@dnc/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BlobBinding, KeyRing } from '../src/crypto/envelope.js';
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

describe('writeBlob (real PostgreSQL)', () => {
  beforeAll(async () => {
    await ensureDatabase(databaseUrl);
    await migrateSchema(databaseUrl, 'jobs', MIGRATIONS);
    pool = createPool(databaseUrl, 2);
  });

  afterAll(async () => {
    await pool?.end();
    await dropDatabase(databaseUrl);
  });

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
