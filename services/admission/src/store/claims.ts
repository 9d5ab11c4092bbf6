import { Batcher, type Pool } from '@dnc/kit';
import type { IdempotencyRecord, KeyNames, Kind, RecordState } from '../domain/idempotency.js';

export interface NewClaim {
  fingerprint: string;
  kind: Kind;
  admissionId: string;
  jobId: string | null;
}

interface ClaimInput extends NewClaim {
  keyId: string;
  key: KeyNames;
}

/**
 * How new claims name their Idempotency-Key (DNC_IDEMPOTENCY_KEY_FORM). `keyed`: key_hash and key_mac
 * both hold the MAC; nothing unkeyed is written. `transition`, for the rollout of an upgrade from a
 * release that wrote only key_hash = SHA-256: key_hash keeps that hash (so those pods, which look up
 * and conflict on it, see these claims) and key_mac gets the MAC (so `keyed` pods conflict on it).
 * Every form finds records of every form. An upgrade rolls out `transition` first, then `keyed`: a
 * `keyed` pod beside a pod of the older release would not see that pod's claims made after its own
 * (docs/deploy.md, "Idempotency-Key records").
 */
export type KeyForm = 'keyed' | 'transition';

export interface StoredClaim extends IdempotencyRecord {
  admissionId: string;
  jobId: string | null;
}

/** How long idempotency records are kept, by kind (v1 `sync`, v2 `job`). */
export interface Retention {
  syncSeconds: number;
  jobSeconds: number;
}

/** A claim found by its admission id. */
export interface ClaimState {
  kind: Kind;
  state: RecordState;
  jobId: string | null;
}

const KIND_CODE: Record<Kind, number> = { sync: 1, job: 2 };
const KIND_OF: Record<number, Kind> = { 1: 'sync', 2: 'job' };

/**
 * Idempotency claims (table admission.idempotency_records), keyed by (API key, keyed MAC of the
 * Idempotency-Key): the fingerprint, kind and state of one logical request and, for v2, its job id.
 * The unique keys decide races: exactly one INSERT of a key wins.
 */
export class ClaimStore {
  /**
   * New claims are inserted in batches: the requests that arrive while one INSERT is in flight go
   * together in the next (one statement and one durable commit for all of them). The statements of
   * every request (insert, completion, the batch read) are named: prepared once per connection.
   */
  private readonly inserts = new Batcher<ClaimInput, boolean>((items) => this.insertClaims(items), {
    maxBatch: 256,
    maxInFlight: 2,
    sameTurn: true,
  });

  /** The form new claims are written in: set by KeyFormGuard (key-form.ts). */
  private form: KeyForm = 'keyed';
  /** Whether the plain hash is sent at all: only while records may carry it (key-form.ts). */
  private plainHashLookups = true;

  constructor(private readonly pool: Pool) {}

  useForm(form: KeyForm, plainHashLookups: boolean): void {
    this.form = form;
    this.plainHashLookups = plainHashLookups || form === 'transition';
  }

  /** The plain hash to send: none once no record carries it, so it is in no statement (or its log). */
  private legacyOf(key: KeyNames): Buffer | null {
    return this.plainHashLookups ? key.legacy() : null;
  }

  /**
   * Records without a MAC (an older release's, which writes the plain hash only): any still kept, and
   * any created within `seconds` (a pod of that release took requests that recently). The partial index
   * on them answers both.
   */
  async recordsWithoutMac(seconds: number): Promise<{ any: boolean; recent: boolean }> {
    const r = await this.pool.query<{ any: boolean; recent: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM admission.idempotency_records WHERE key_mac IS NULL) AS any,
              EXISTS (SELECT 1 FROM admission.idempotency_records
                      WHERE key_mac IS NULL AND created_at > now() - make_interval(secs => $1::float8)) AS recent`,
      [seconds],
    );
    return { any: r.rows[0]?.any ?? true, recent: r.rows[0]?.recent ?? true };
  }

  /**
   * Claim (key, Idempotency-Key) for a new admission. Returns undefined when the claim was made, or
   * the existing record when the key is already taken.
   */
  async claim(keyId: string, key: KeyNames, c: NewClaim, attempt = 1): Promise<StoredClaim | undefined> {
    if (await this.inserts.submit({ keyId, key, ...c })) return undefined;
    const existing = await this.find(keyId, key);
    // Deleted between the two statements (an abort): claim again, a bounded number of times.
    if (!existing) {
      if (attempt >= 3) throw new Error('idempotency claim kept changing');
      return this.claim(keyId, key, c, attempt + 1);
    }
    return existing;
  }

  /**
   * The record of (key, Idempotency-Key), if there is one; nothing is claimed. Found by its MAC, or by
   * the plain hash of a record an older release wrote. There is one: a claim is made only when neither
   * exists (insertClaims); the oldest is taken should an upgrade done out of order have left two.
   */
  async find(keyId: string, key: KeyNames): Promise<StoredClaim | undefined> {
    // Two lookups on unique keys, each an index probe whatever plan the named statement keeps (an ORDER BY
    // over both could walk the created_at index). A record of the transition form has both: found once.
    // The second filters on key_mac IS NULL outside a fence (OFFSET 0): inside, the planner could read the
    // partial index of such records whole, filtering on the key (a review, 2026-12-05, with stale stats).
    const r = await this.pool.query({
      name: 'admission.find_claim',
      text: `SELECT fingerprint, kind, state, admission_id, job_id, created_at,
              (extract(epoch FROM now() - claimed_at) * 1000)::float8 AS age_ms
       FROM admission.idempotency_records WHERE key_id = $1 AND key_mac = $2
       UNION ALL
       SELECT fingerprint, kind, state, admission_id, job_id, created_at, age_ms FROM (
         SELECT fingerprint, kind, state, admission_id, job_id, created_at, key_mac,
                (extract(epoch FROM now() - claimed_at) * 1000)::float8 AS age_ms
         FROM admission.idempotency_records WHERE key_id = $1 AND key_hash = $3 OFFSET 0) AS older
       WHERE older.key_mac IS NULL`,
      values: [keyId, key.mac, this.legacyOf(key)],
    });
    const row = r.rows.reduce<(typeof r.rows)[number] | undefined>(
      (first, x) => (first && first.created_at <= x.created_at ? first : x),
      undefined,
    );
    if (!row) return undefined;
    return {
      fingerprint: row.fingerprint,
      kind: KIND_OF[row.kind as number] ?? 'sync',
      state: row.state as RecordState,
      // The age comes from the database clock that wrote claimed_at: replicas' clock skew cannot
      // make a live claim look abandoned.
      claimedAtMs: Date.now() - Number(row.age_ms),
      admissionId: row.admission_id,
      jobId: row.job_id,
    };
  }

  /**
   * One INSERT for a batch of claims; true for each claim that was made. Two claims of the same key in
   * one batch: the unique keys let exactly the first through (ON CONFLICT DO NOTHING skips the later
   * row of the same statement too), which `admission_id` tells apart. A claim of either form conflicts
   * with one of the other on key_mac, and a `transition` claim with an older release's on key_hash; a
   * record an older release wrote before (found by its plain hash, key_mac NULL) is a conflict too,
   * through the subquery: nothing else could tell a `keyed` claim of it. A scalar subquery, one primary
   * key probe per row: as NOT EXISTS, the plan this named statement cached while the table was small
   * was a hash anti-join over a scan of the whole table, on every batch after (an A/B bench, 2026-12-05:
   * PostgreSQL's CPU per request doubled and throughput fell round after round). Rows go in key order (then
   * arrival): two batches holding the same keys in opposite orders each waited for the other's
   * uncommitted row, and PostgreSQL ended one as a deadlock, failing all its claims (found by a review,
   * 2026-12-05). In key order the later batch waits for the earlier, then finds its keys taken.
   */
  private async insertClaims(items: ClaimInput[]): Promise<boolean[]> {
    const r = await this.pool.query<{ admission_id: string }>({
      name: 'admission.insert_keyed_claims',
      text: `INSERT INTO admission.idempotency_records
         (key_id, key_hash, key_mac, fingerprint, kind, state, admission_id, job_id)
       SELECT key_id, CASE WHEN $8::boolean THEN legacy ELSE key_mac END, key_mac,
              fingerprint, kind, 'in_progress', admission_id, job_id
       FROM unnest($1::uuid[], $2::bytea[], $3::bytea[], $4::text[], $5::smallint[], $6::uuid[], $7::uuid[])
         WITH ORDINALITY AS t(key_id, key_mac, legacy, fingerprint, kind, admission_id, job_id, n)
       WHERE t.legacy IS NULL
          OR (SELECT true FROM admission.idempotency_records r
              WHERE r.key_id = t.key_id AND r.key_hash = t.legacy LIMIT 1) IS NULL
       ORDER BY t.key_id, t.key_mac, t.n
       ON CONFLICT DO NOTHING
       RETURNING admission_id`,
      values: [
        items.map((i) => i.keyId),
        items.map((i) => i.key.mac),
        items.map((i) => this.legacyOf(i.key)),
        items.map((i) => i.fingerprint),
        items.map((i) => KIND_CODE[i.kind]),
        items.map((i) => i.admissionId),
        items.map((i) => i.jobId),
        this.form === 'transition',
      ],
    });
    const made = new Set(r.rows.map((row) => row.admission_id));
    return items.map((i) => made.has(i.admissionId));
  }

  /**
   * Take over a stale claim: only when it is still the one we looked at (same admission id, still in
   * progress), so two retries racing for a stale claim cannot both win. A v2 claim taken over gets
   * its new job identity `newJobId` (the old one is fenced). The admission id names the record (it is
   * unique); the API key is checked beside it.
   */
  async takeOver(
    keyId: string,
    expectedAdmissionId: string,
    newAdmissionId: string,
    newJobId?: string,
  ): Promise<boolean> {
    const r = await this.pool.query(
      `UPDATE admission.idempotency_records
       SET admission_id = $3, job_id = coalesce($4::uuid, job_id), claimed_at = now()
       WHERE key_id = $1 AND admission_id = $2 AND state = 'in_progress'`,
      [keyId, expectedAdmissionId, newAdmissionId, newJobId ?? null],
    );
    return r.rowCount === 1;
  }

  /** Remove an in-progress claim so the Idempotency-Key can be used again (failure before work). */
  async dropClaim(admissionId: string): Promise<void> {
    await this.pool.query(
      "DELETE FROM admission.idempotency_records WHERE admission_id = $1 AND state = 'in_progress'",
      [admissionId],
    );
  }

  async claimByAdmission(admissionId: string): Promise<ClaimState | undefined> {
    const r = await this.pool.query(
      'SELECT kind, state, job_id FROM admission.idempotency_records WHERE admission_id = $1',
      [admissionId],
    );
    const row = r.rows[0];
    if (!row) return undefined;
    return { kind: KIND_OF[row.kind as number] ?? 'sync', state: row.state, jobId: row.job_id };
  }

  /** Claims by admission id, many at once (Complete in batches). */
  async claimsByAdmission(
    admissionIds: string[],
  ): Promise<Map<string, { kind: Kind; state: RecordState; keyId: string }>> {
    const r = await this.pool.query({
      name: 'admission.claims_by_admission_key',
      text: 'SELECT admission_id, kind, state, key_id FROM admission.idempotency_records WHERE admission_id = ANY($1::uuid[])',
      values: [admissionIds],
    });
    return new Map(
      r.rows.map((row) => [
        row.admission_id as string,
        { kind: KIND_OF[row.kind as number] ?? 'sync', state: row.state, keyId: row.key_id as string },
      ]),
    );
  }

  /** Mark many v1 claims completed in one statement. */
  async markCompleted(admissionIds: string[]): Promise<void> {
    if (admissionIds.length === 0) return;
    await this.pool.query({
      name: 'admission.mark_completed',
      text: "UPDATE admission.idempotency_records SET state = 'completed' WHERE admission_id = ANY($1::uuid[])",
      values: [admissionIds],
    });
  }

  async markClaim(admissionId: string, state: 'completed' | 'accepted', jobId?: string): Promise<boolean> {
    const r = await this.pool.query(
      `UPDATE admission.idempotency_records SET state = $2
       WHERE admission_id = $1 AND ($3::uuid IS NULL OR job_id = $3::uuid)`,
      [admissionId, state, jobId ?? null],
    );
    return r.rowCount === 1;
  }

  /**
   * Claims still in progress past their bound (v2 after `jobSeconds`, v1 after `syncSeconds`): their
   * owner gave up or died. Oldest first, at most `limit` of each kind (the partial index on in-progress
   * claims). Each kind has its own share: found by a review (2026-12-05), v2 claims the reconciler cannot
   * resolve while the scheduler is down stay the oldest, and a hundred of them kept every v1 claim behind
   * them (its reservation, its key's retries) unresolved until the scheduler was back. `excluded`: claims
   * the caller leaves out for now (ones that failed, reconciler.ts).
   */
  async staleClaims(
    jobSeconds: number,
    syncSeconds: number,
    limit = 100,
    excluded: readonly string[] = [],
  ): Promise<{ admissionId: string; kind: Kind; jobId: string | null }[]> {
    const r = await this.pool.query(
      `(SELECT admission_id, kind, job_id, claimed_at FROM admission.idempotency_records
        WHERE state = 'in_progress' AND kind = 2 AND claimed_at < now() - make_interval(secs => $1::float8)
          AND admission_id <> ALL($4::uuid[])
        ORDER BY claimed_at LIMIT $3)
       UNION ALL
       (SELECT admission_id, kind, job_id, claimed_at FROM admission.idempotency_records
        WHERE state = 'in_progress' AND kind <> 2 AND claimed_at < now() - make_interval(secs => $2::float8)
          AND admission_id <> ALL($4::uuid[])
        ORDER BY claimed_at LIMIT $3)
       ORDER BY claimed_at`,
      [jobSeconds, syncSeconds, limit, excluded],
    );
    return r.rows.map((row) => ({
      admissionId: row.admission_id as string,
      kind: KIND_OF[row.kind as number] ?? 'sync',
      jobId: row.job_id as string | null,
    }));
  }

  /** Delete records past their kind's retention, in batches; returns how many went. */
  async purgeIdempotency(retention: Retention, batch = 1000): Promise<number> {
    let total = 0;
    for (;;) {
      const r = await this.pool.query(
        `DELETE FROM admission.idempotency_records WHERE ctid IN (
           SELECT ctid FROM admission.idempotency_records
           WHERE created_at < now() - make_interval(secs => least($1::float8, $2::float8))
             AND created_at < now() - make_interval(secs => CASE kind WHEN 2 THEN $2::float8 ELSE $1::float8 END)
           LIMIT $3)`,
        [retention.syncSeconds, retention.jobSeconds, batch],
      );
      total += r.rowCount ?? 0;
      if ((r.rowCount ?? 0) < batch) return total;
    }
  }
}
