import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { dropDatabase, uniqueSuffix } from '@dnc/devstack';
import { createPool, ensureDatabase, migrateSchema, type Pool } from '@dnc/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { binaryCopyRows, readSegments } from '../src/store/segment-copy.js';

// A blob's sealed segments are read with a binary COPY (the bytes as stored) instead of a SELECT that
// answers bytea as hex text. Against the real PostgreSQL: the same rows a SELECT gives, in order and
// within bounds; the job id cannot change the statement; a connection that fails mid-read is not
// handed back to the pool. The parser refuses what is not the format it reads.
const MIGRATIONS = fileURLToPath(new URL('../migrations', import.meta.url));
const base = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
base.pathname = `/dnc_segcopy_${uniqueSuffix()}`;
const databaseUrl = base.toString();
let pool: Pool;

async function jobWithSegments(sizes: number[], kind: 'input' | 'result' = 'input') {
  const jobId = randomUUID();
  await pool.query(
    `INSERT INTO jobs.jobs (id, org_id, country, status, submitted_count, reservation_id, hard_cap_at)
     VALUES ($1, $2, 'co', 'queued', 1, $3, now() + interval '1 hour')`,
    [jobId, randomUUID(), randomUUID()],
  );
  await pool.query(
    `INSERT INTO jobs.job_blobs (job_id, kind, kek_id, wrapped_dek, segment_count, byte_length, format)
     VALUES ($1, $2, 'k1', '\\x00', $3, 0, 2)`,
    [jobId, kind, sizes.length],
  );
  const sealed = sizes.map((n) => randomBytes(n));
  // Written out of order: the read must come back ordered by seq.
  for (const seq of sizes.map((_, i) => i).reverse())
    await pool.query(
      'INSERT INTO jobs.job_blob_segments (job_id, kind, seq, sealed) VALUES ($1, $2, $3, $4)',
      [jobId, kind, seq, sealed[seq]],
    );
  return { jobId, sealed };
}

beforeAll(async () => {
  await ensureDatabase(databaseUrl);
  await migrateSchema(databaseUrl, 'jobs', MIGRATIONS);
  pool = createPool(databaseUrl, 1);
});

afterAll(async () => {
  await pool?.end();
  await dropDatabase(databaseUrl);
});

describe('readSegments (binary COPY, real PostgreSQL)', () => {
  it('gives the rows a SELECT gives, byte for byte, in order, within [from, to)', async () => {
    const sizes = [0, 1, 3 * 1024 * 1024, 17, 65_536, 5];
    const { jobId, sealed } = await jobWithSegments(sizes);
    const all = await readSegments(pool, jobId, 'input', 0, sizes.length);
    expect(all.map((r) => r.seq)).toEqual([0, 1, 2, 3, 4, 5]);
    for (const r of all) expect(r.sealed.equals(sealed[r.seq]!)).toBe(true);
    const select = await pool.query<{ seq: number; sealed: Buffer }>(
      'SELECT seq, sealed FROM jobs.job_blob_segments WHERE job_id = $1 AND kind = $2 ORDER BY seq',
      [jobId, 'input'],
    );
    expect(select.rows.every((row, i) => row.sealed.equals(all[i]!.sealed))).toBe(true);
    expect((await readSegments(pool, jobId, 'input', 2, 4)).map((r) => r.seq)).toEqual([2, 3]);
    expect(await readSegments(pool, jobId, 'input', 6, 10)).toEqual([]);
    expect(await readSegments(pool, jobId, 'result', 0, 10)).toEqual([]);
  });

  it('a job id is a quoted literal: one that tries to widen the statement is refused as no job id', async () => {
    const { jobId } = await jobWithSegments([8]);
    const error = await readSegments(pool, `${jobId}' OR '1'='1`, 'input', 0, 4).catch((e) => e);
    // 22P02: invalid input syntax for type uuid. Unquoted, the condition would have read every row.
    expect(error).toMatchObject({ code: '22P02' });
    await expect(readSegments(pool, jobId, 'input', 0, 1.5)).rejects.toThrow('integers');
    expect(await readSegments(pool, jobId, 'input', 0, 4)).toHaveLength(1);
  });

  it('a connection that fails during the read is not handed back: the next read gets a new one', async () => {
    const { jobId } = await jobWithSegments([1024, 1024]);
    // The COPY is made to wait for a lock, so its backend is terminated while the read is in progress
    // (an idle connection's termination may be noticed before the pool hands it out: not this case).
    const other = createPool(databaseUrl, 2);
    const locker = await other.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE jobs.job_blob_segments IN ACCESS EXCLUSIVE MODE');
      const reading = readSegments(pool, jobId, 'input', 0, 2).catch((e: unknown) => e);
      let pid: number | undefined;
      for (let i = 0; i < 500 && pid === undefined; i++) {
        const waiting = await other.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'COPY (SELECT seq, sealed%'`,
        );
        pid = waiting.rows[0]?.pid;
        if (pid === undefined) await new Promise((r) => setTimeout(r, 10));
      }
      expect(pid).toBeDefined();
      await other.query('SELECT pg_terminate_backend($1)', [pid]);
      await locker.query('ROLLBACK');
      expect(await reading).toBeInstanceOf(Error);
      const again = await readSegments(pool, jobId, 'input', 0, 2);
      expect(again.map((r) => r.seq)).toEqual([0, 1]);
      const now = (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      expect(now).not.toBe(pid);
    } finally {
      locker.release();
      await other.end();
    }
  });
});

/** A binary COPY stream of (seq, sealed) rows, as PostgreSQL writes it; `edit` may spoil it. */
function copyStream(rows: [number, Buffer][], flags = 0): Buffer {
  const parts: Buffer[] = [Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1')];
  const int32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeInt32BE(n);
    return b;
  };
  const int16 = (n: number) => {
    const b = Buffer.alloc(2);
    b.writeInt16BE(n);
    return b;
  };
  parts.push(int32(flags), int32(0));
  for (const [seq, sealed] of rows) parts.push(int16(2), int32(4), int32(seq), int32(sealed.length), sealed);
  parts.push(int16(-1));
  return Buffer.concat(parts);
}

describe('binaryCopyRows', () => {
  it('reads the rows of a well-formed stream', () => {
    const rows = binaryCopyRows(
      copyStream([
        [0, Buffer.from('ab')],
        [7, Buffer.alloc(0)],
      ]),
    );
    expect(rows.map((r) => [r.seq, r.sealed.toString()])).toEqual([
      [0, 'ab'],
      [7, ''],
    ]);
  });

  it('refuses a stream cut short, followed by more bytes, of another format, or with a NULL field', () => {
    const good = copyStream([[0, Buffer.from('abcdef')]]);
    expect(() => binaryCopyRows(good.subarray(0, good.length - 4))).toThrow();
    expect(() => binaryCopyRows(good.subarray(0, good.length - 2))).toThrow();
    expect(() => binaryCopyRows(Buffer.concat([good, Buffer.from([0])]))).toThrow('after its end');
    expect(() => binaryCopyRows(copyStream([[0, Buffer.from('a')]], 1 << 16))).toThrow('another format');
    expect(() => binaryCopyRows(Buffer.from('not a copy stream at all'))).toThrow('not a binary COPY');
    const nullField = copyStream([[0, Buffer.from('a')]]);
    nullField.writeInt32BE(-1, 19 + 2 + 8);
    expect(() => binaryCopyRows(nullField)).toThrow('NULL or cut short');
    const oneField = copyStream([[0, Buffer.from('a')]]);
    oneField.writeInt16BE(1, 19);
    expect(() => binaryCopyRows(oneField)).toThrow('two fields');
  });
});
