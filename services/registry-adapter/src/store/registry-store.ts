import { createHash } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { boundedCopy, type Pool, type PoolClient } from '@dnc/kit';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';

/** Identity of one committed registry snapshot. */
export interface SnapshotInfo {
  id: string;
  /** When the registry was consulted for it (its `as_of`, else its commit time): what its age is read from. */
  time: Date;
  /**
   * The latest as_of of the loads it is made of since its last replace, removals included (`time` when
   * unknown): what a new load is put in order against (registry-load.ts `checkOrder`).
   */
  orderTime?: Date;
  size: number;
  /** The numbering rules its keys were built with; null: committed before snapshots were stamped. */
  rules: string | null;
}

export type SnapshotMode = 'replace' | 'add' | 'remove' | 'seed';

export interface SnapshotStats {
  mode: SnapshotMode;
  linesRead: number;
  accepted: number;
  rejected: number;
  /** When the registry was consulted for it; null: now (its commit). */
  asOf: Date | null;
  /** Which load it was made from (`loadDigest`); null for a seed. */
  loadDigest: string | null;
  /** The as_of its load gave; null: none (`asOf` is then now for a replace, the base's for a delta). */
  loadAsOf: Date | null;
  /** Its `orderTime`; null: its `asOf`, else its commit time. */
  orderAsOf: Date | null;
}

/**
 * A load's identity with its as_of (`findLoad`): its mode and its numbers (sorted, distinct). A retried
 * or re-run load has the same digest.
 */
export function loadDigest(mode: 'replace' | 'add' | 'remove', keys: Float64Array): string {
  return createHash('sha256')
    .update(`${mode}\n`)
    .update(new Uint8Array(keys.buffer, keys.byteOffset, keys.byteLength))
    .digest('hex');
}

/** Old snapshot tables kept besides the current one, so a replica still reading one is not cut off. */
const KEEP_PREVIOUS = 2;
/**
 * The client's bound on one registry COPY (a load's write, a replica's read: 10-30 M keys each), in
 * place of a query's 20 s; PostgreSQL's own statement timeout is off for them.
 */
const REGISTRY_COPY_TIMEOUT_MS = 10 * 60_000;

/**
 * The registry copy of one country in Postgres schema `registry_<cc>`: immutable snapshot tables and
 * the pointer to the current one. Only this adapter reads or writes the schema.
 */
export class RegistryStore {
  readonly schema: string;
  private readonly lockKey: string;

  /**
   * `rules`: the numbering rules of this process (NUMBERING_RULES), stamped on every snapshot it commits;
   * a snapshot stamped with other rules is not this process's to serve or to build on (`isOwn`).
   */
  constructor(
    private readonly pool: Pool,
    readonly country: string,
    readonly rules: string,
    /** A load's connection silent this long (its process frozen or cut off) is closed by PostgreSQL. */
    private readonly loadIdleMs = 30_000,
  ) {
    if (!/^[a-z]{2}$/.test(country)) throw new Error('country must be two lowercase letters');
    this.schema = `registry_${country}`;
    // A signed 64-bit advisory lock key derived from the schema name: one writer per country.
    this.lockKey = createHash('sha256')
      .update(`dnc-registry-load:${this.schema}`)
      .digest()
      .readBigInt64BE(0)
      .toString();
  }

  private t(name: string): string {
    return `"${this.schema}"."${name}"`;
  }

  async current(client: Pool | PoolClient = this.pool): Promise<SnapshotInfo | undefined> {
    const { rows } = await client.query<{
      id: number;
      created_at: Date;
      order_time: Date;
      size: number;
      numbering_rules: string | null;
    }>(
      `SELECT s.id, COALESCE(s.as_of, s.created_at) AS created_at,
              COALESCE(s.order_as_of, s.as_of, s.created_at) AS order_time, s.size, s.numbering_rules
         FROM ${this.t('current_snapshot')} c
         JOIN ${this.t('snapshots')} s ON s.id = c.snapshot_id`,
    );
    const row = rows[0];
    return row
      ? {
          id: String(row.id),
          time: row.created_at,
          orderTime: row.order_time,
          size: Number(row.size),
          rules: row.numbering_rules,
        }
      : undefined;
  }

  /**
   * The time loads are put in order against on `snapshot` (its `order_as_of`). A snapshot written by a
   * replica of the release before has none (a rolling upgrade, a rollback): then the latest as_of of the
   * loads back to its replace or to a snapshot that has one, so an older replica's load in between does
   * not drop the order of a removal applied before it (found by a review, 2026-12-05).
   */
  async orderTime(client: Pool | PoolClient, snapshotId: string): Promise<Date | undefined> {
    const { rows } = await client.query<{ order_time: Date | null }>(
      `WITH RECURSIVE chain AS (
         SELECT id, mode, based_on, order_as_of, COALESCE(as_of, created_at) AS t, load_as_of, 0 AS depth
           FROM ${this.t('snapshots')} WHERE id = $1
         UNION ALL
         SELECT p.id, p.mode, p.based_on, p.order_as_of, COALESCE(p.as_of, p.created_at), p.load_as_of,
                c.depth + 1
           FROM chain c JOIN ${this.t('snapshots')} p ON p.id = c.based_on
          WHERE c.order_as_of IS NULL AND c.mode IN ('add', 'remove') AND c.depth < 10000
       )
       SELECT max(COALESCE(order_as_of, GREATEST(t, load_as_of))) AS order_time FROM chain`,
      [snapshotId],
    );
    return rows[0]?.order_time ?? undefined;
  }

  /**
   * Whether a snapshot's keys were built with this process's numbering rules. An unstamped one (committed
   * before snapshots were stamped) is not: its rules are unknown. It was served as if it were, which an
   * upgrade that brings the stamp and revision 2 together defeated silently (every snapshot of the
   * previous release unstamped, built by revision 1, served by revision 2 with no mismatch told), found
   * by a review of upgrade safety (2026-12-03).
   */
  isOwn(snapshot: SnapshotInfo): boolean {
    return snapshot.rules === this.rules;
  }

  /**
   * Read every key of a snapshot into a Float64Array (COPY TO STDOUT, parsed from bytes: no string per
   * row). The table was written sorted and distinct; the caller verifies that.
   */
  async readKeys(snapshot: SnapshotInfo, client?: PoolClient): Promise<Float64Array> {
    const own = client ?? (await this.pool.connect());
    let failed: Error | undefined;
    try {
      const { rows } = await own.query<{ table_name: string | null }>(
        `SELECT table_name FROM ${this.t('snapshots')} WHERE id = $1`,
        [snapshot.id],
      );
      const table = rows[0]?.table_name;
      if (!table) throw new Error(`snapshot ${snapshot.id} has no numbers table`);
      // The COPY's own bound, on the server too: a reader frozen mid-COPY (its session active, never idle)
      // does not keep the statement, or a load's lock, past it.
      await own.query(`SET statement_timeout = ${REGISTRY_COPY_TIMEOUT_MS}`);
      const keys = new Float64Array(snapshot.size);
      let n = 0;
      let value = 0;
      let inNumber = false;
      const sink = new Writable({
        write(chunk: Buffer, _enc, done) {
          for (let i = 0; i < chunk.length; i++) {
            const c = chunk[i] as number;
            if (c === 10) {
              if (inNumber) {
                if (n >= keys.length) return done(new Error('snapshot holds more rows than recorded'));
                keys[n++] = value;
              }
              value = 0;
              inNumber = false;
            } else {
              value = value * 10 + (c - 48);
              inNumber = true;
            }
          }
          done();
        },
      });
      await pipeline(
        own.query(boundedCopy(copyTo(`COPY ${this.t(table)} (key) TO STDOUT`), REGISTRY_COPY_TIMEOUT_MS)),
        sink,
      );
      if (n !== keys.length) throw new Error('snapshot holds fewer rows than recorded');
      return keys;
    } catch (error) {
      failed = error instanceof Error ? error : new Error(String(error));
      throw error;
    } finally {
      await own.query('RESET statement_timeout').catch(() => {});
      // A connection that failed in the middle of a COPY is not given back to the pool.
      if (!client) own.release(failed);
    }
  }

  /**
   * The latest snapshot made from the load `digest` (`loadDigest`) with the as_of `asOf`, where the one
   * or the other gave none too ('any': whatever its as_of): the same load again, as far as can be told.
   * Loads of every numbering rules count (the same file read by other rules has, all but always, the same
   * keys): a release of new rules would otherwise forget every load before it, and a retried removal or
   * last month's file re-run after its reload would be applied.
   */
  async findLoad(
    client: PoolClient,
    digest: string,
    asOf: Date | undefined | 'any',
  ): Promise<{ id: string; asOf: Date | null } | undefined> {
    const { rows } = await client.query<{ id: string; as_of: Date | null }>(
      `SELECT s.id::text AS id, s.load_as_of AS as_of FROM ${this.t('snapshots')} s
        WHERE s.load_digest = $1
          AND ($2 OR $3::timestamptz IS NULL OR s.load_as_of IS NULL OR s.load_as_of = $3)
        ORDER BY s.id DESC LIMIT 1`,
      [digest, asOf === 'any', asOf === 'any' ? null : (asOf ?? null)],
    );
    const row = rows[0];
    return row ? { id: row.id, asOf: row.as_of } : undefined;
  }

  /**
   * Replaces committed before loads were identified (load_digest NULL: the release before 2026-12-04)
   * whose numbers table remains: what `identifyEarlierLoads` can still know them by.
   */
  async unidentifiedReplaces(client: PoolClient): Promise<SnapshotInfo[]> {
    const { rows } = await client.query<{ id: string; time: Date; size: string; rules: string | null }>(
      `SELECT id::text AS id, COALESCE(as_of, created_at) AS time, size, numbering_rules AS rules
         FROM ${this.t('snapshots')}
        WHERE mode = 'replace' AND load_digest IS NULL AND table_name IS NOT NULL ORDER BY id`,
    );
    return rows.map((r) => ({ id: r.id, time: r.time, size: Number(r.size), rules: r.rules }));
  }

  /** Record which load a replace committed before loads were identified was made from (its as_of its own). */
  async identifyReplace(client: PoolClient, snapshotId: string, digest: string): Promise<void> {
    await client.query(
      `UPDATE ${this.t('snapshots')} SET load_digest = $2, load_as_of = as_of
        WHERE id = $1 AND load_digest IS NULL`,
      [snapshotId, digest],
    );
  }

  /**
   * Run `work` holding this country's load lock on a dedicated connection; undefined when another
   * load holds it (the caller reports "busy" instead of queueing a second 10,000,000-line load).
   *
   * The lock is the session's: it lasts as long as the connection. A load reads its file from its caller
   * between statements, so the connection is idle most of the time; PostgreSQL closes it once idle (in a
   * transaction or not) for `loadIdleMs`, and the process keeps it busy meanwhile with a statement every
   * third of that. Found by a review (2026-12-04): an adapter frozen mid-load (SIGSTOP, a stalled node)
   * kept the lock for as long as its connection lived, its kernel answering TCP keepalives (hours), and
   * every other replica answered "busy" to every load of the country meanwhile. The connection is not
   * reused afterwards (its timeouts are the load's).
   */
  async withLoadLock<T>(work: (client: PoolClient) => Promise<T>): Promise<T | undefined> {
    const client = await this.pool.connect();
    let locked = false;
    let failed: Error | undefined;
    let beat: NodeJS.Timeout | undefined;
    try {
      const { rows } = await client.query<{ ok: boolean }>(
        `SELECT set_config('idle_session_timeout', $2, false),
                set_config('idle_in_transaction_session_timeout', $2, false),
                pg_try_advisory_lock($1::bigint) AS ok`,
        [this.lockKey, `${this.loadIdleMs}ms`],
      );
      locked = rows[0]?.ok === true;
      if (!locked) return undefined;
      // At most one waiting: behind a long statement (a COPY) the next is not sent meanwhile.
      let beating = false;
      beat = setInterval(
        () => {
          if (beating) return;
          beating = true;
          client
            .query('SELECT 1')
            .catch(() => {})
            .finally(() => {
              beating = false;
            });
        },
        Math.max(100, Math.floor(this.loadIdleMs / 3)),
      );
      return await work(client);
    } catch (error) {
      failed = error instanceof Error ? error : new Error(String(error));
      throw error;
    } finally {
      if (beat) clearInterval(beat);
      if (locked) await client.query('SELECT pg_advisory_unlock($1::bigint)', [this.lockKey]).catch(() => {});
      // Never reused: its idle timeouts are the load's, and a load that failed may have failed in the middle
      // of a COPY.
      client.release(failed ?? true);
    }
  }

  /**
   * Write `keys` (sorted, distinct) as a new snapshot and make it current, in ONE transaction: the
   * table, its rows, the snapshot row and the pointer flip commit together or not at all.
   */
  async commitSnapshot(
    client: PoolClient,
    keys: Float64Array,
    stats: SnapshotStats,
    basedOn: SnapshotInfo | undefined,
    /** Called last before the COMMIT: a throw rolls the snapshot back (a load whose caller gave up). */
    beforeCommit?: () => void,
  ): Promise<SnapshotInfo> {
    await client.query('BEGIN');
    try {
      // The COPY's own bound, on the server too: a load frozen mid-COPY (its session active, never idle)
      // keeps the load lock at most that long.
      await client.query(`SET LOCAL statement_timeout = ${REGISTRY_COPY_TIMEOUT_MS}`);
      const { rows } = await client.query<{ id: number }>(
        `SELECT nextval('${this.t('snapshot_ids')}') AS id`,
      );
      const id = Number(rows[0]?.id);
      const table = `numbers_${id}`;
      await client.query(`CREATE TABLE ${this.t(table)} (key bigint NOT NULL)`);
      await pipeline(
        Readable.from(keyLines(keys)),
        client.query(
          boundedCopy(copyFrom(`COPY ${this.t(table)} (key) FROM STDIN`), REGISTRY_COPY_TIMEOUT_MS),
        ),
      );
      const inserted = await client.query<{ created_at: Date; order_time: Date }>(
        `INSERT INTO ${this.t('snapshots')}
           (id, mode, size, lines_read, accepted, rejected, based_on, table_name, numbering_rules, as_of,
            load_digest, load_as_of, order_as_of)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
         RETURNING COALESCE(as_of, created_at) AS created_at, COALESCE(order_as_of, as_of, created_at) AS order_time`,
        [
          id,
          stats.mode,
          keys.length,
          stats.linesRead,
          stats.accepted,
          stats.rejected,
          basedOn?.id ?? null,
          table,
          this.rules,
          stats.asOf,
          stats.loadDigest,
          stats.loadAsOf,
          stats.orderAsOf,
        ],
      );
      await client.query(
        `INSERT INTO ${this.t('current_snapshot')} (singleton, snapshot_id) VALUES (true, $1)
         ON CONFLICT (singleton) DO UPDATE SET snapshot_id = EXCLUDED.snapshot_id, updated_at = now()`,
        [id],
      );
      beforeCommit?.();
      await client.query('COMMIT');
      const row = inserted.rows[0]!;
      return {
        id: String(id),
        time: row.created_at,
        orderTime: row.order_time,
        size: keys.length,
        rules: this.rules,
      };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    }
  }

  /** Drop the numbers tables of snapshots older than the current one and its KEEP_PREVIOUS predecessors. */
  async dropOldSnapshots(client: PoolClient, currentId: string): Promise<number> {
    const { rows } = await client.query<{ id: number; table_name: string }>(
      `SELECT id, table_name FROM ${this.t('snapshots')}
        WHERE id < $1 AND table_name IS NOT NULL ORDER BY id DESC OFFSET $2`,
      [currentId, KEEP_PREVIOUS],
    );
    for (const row of rows) {
      await client.query(`DROP TABLE IF EXISTS ${this.t(row.table_name)}`);
      await client.query(`UPDATE ${this.t('snapshots')} SET table_name = NULL WHERE id = $1`, [row.id]);
    }
    return rows.length;
  }
}

/** The keys as COPY text, in blocks of 16,384 lines. */
function* keyLines(keys: Float64Array): Generator<string> {
  const BLOCK = 16_384;
  for (let i = 0; i < keys.length; i += BLOCK) {
    const end = Math.min(keys.length, i + BLOCK);
    let s = '';
    for (let j = i; j < end; j++) s += `${keys[j]}\n`;
    yield s;
  }
}
