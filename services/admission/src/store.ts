import { randomUUID } from 'node:crypto';
import { Batcher, inTransaction, type Pool } from '@dnc/kit';
import type { PurchaseState } from './domain/check-order.js';
import type { IdempotencyRecord, Kind, RecordState } from './domain/idempotency.js';

export interface OrganizationRow {
  orgId: string;
  name: string;
  suspended: boolean;
  activationComplete: boolean;
  rateLimit: number | null;
  createdAt: Date;
}

export interface ApiKeyRow {
  keyId: string;
  orgId: string;
  publicId: string;
  createdAt: Date;
  revokedAt: Date | null;
}

export interface PurchaseRow {
  purchaseId: string;
  orgId: string;
  country: string;
  status: PurchaseState;
  activated: boolean;
  monthlyQuota: number;
}

export interface KeyCredential {
  keyId: string;
  orgId: string;
  digest: Buffer;
  revoked: boolean;
  rateLimit: number | null;
}

/** What admission decides a scrub on (steps 5-7 of CHECK_ORDER), read in one round trip. */
export interface GateFacts {
  organization: { suspended: boolean; activationComplete: boolean } | undefined;
  purchase: { status: PurchaseState; activated: boolean } | undefined;
  maintenanceUntil: Date | undefined;
}

/** An API key's credential and the gate facts of its organization for one country. */
export interface KeyFacts extends GateFacts {
  credential: KeyCredential;
}

interface ClaimInput {
  keyId: string;
  keyHash: Buffer;
  fingerprint: string;
  kind: Kind;
  admissionId: string;
  jobId: string | null;
}

export interface StoredClaim extends IdempotencyRecord {
  admissionId: string;
  jobId: string | null;
}

const KIND_CODE: Record<Kind, number> = { sync: 1, job: 2 };
const KIND_OF: Record<number, Kind> = { 1: 'sync', 2: 'job' };

/** Thrown by the store when a row an operator names does not exist. */
export class NotFound extends Error {}
/** Thrown when an operator asks for a transition the current state does not allow. */
export class Conflict extends Error {}

const ORG_COLUMNS = 'org_id, name, suspended, activation_complete, rate_limit, created_at';
const PURCHASE_COLUMNS = 'purchase_id, org_id, country, status, activated, monthly_quota';

// biome-ignore lint/suspicious/noExplicitAny: pg rows
function orgOf(r: any): OrganizationRow {
  return {
    orgId: r.org_id,
    name: r.name,
    suspended: r.suspended,
    activationComplete: r.activation_complete,
    rateLimit: r.rate_limit,
    createdAt: r.created_at,
  };
}

// biome-ignore lint/suspicious/noExplicitAny: pg rows
function purchaseOf(r: any): PurchaseRow {
  return {
    purchaseId: r.purchase_id,
    orgId: r.org_id,
    country: r.country,
    status: r.status,
    activated: r.activated,
    monthlyQuota: r.monthly_quota,
  };
}

// biome-ignore lint/suspicious/noExplicitAny: pg rows
function keyOf(r: any): ApiKeyRow {
  return {
    keyId: r.key_id,
    orgId: r.org_id,
    publicId: r.public_id,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
  };
}

// The gate facts of (org, country): the organization, its open purchase of the country (else the latest
// lapsed one) and the country's operator maintenance window. `$1` names the organization's row `o`.
const GATE_SELECT = `o.suspended, o.activation_complete, p.status AS purchase_status, p.activated,
         m.until AS maintenance_until`;
const GATE_JOINS = `LEFT JOIN LATERAL (
           SELECT status, activated FROM admission.purchases
           WHERE org_id = o.org_id AND country = $2
           ORDER BY (status <> 'lapsed') DESC, created_at DESC LIMIT 1) p ON true
         LEFT JOIN admission.maintenance_windows m ON m.country = $2`;

// biome-ignore lint/suspicious/noExplicitAny: pg rows
function gateOf(r: any): GateFacts {
  return {
    organization:
      r.suspended === null || r.suspended === undefined
        ? undefined
        : { suspended: r.suspended, activationComplete: r.activation_complete },
    purchase: r.purchase_status ? { status: r.purchase_status, activated: r.activated } : undefined,
    maintenanceUntil: r.maintenance_until ?? undefined,
  };
}

/** Postgres access of the admission schema. No other service reads these tables. */
export class AdmissionStore {
  /**
   * New idempotency claims are inserted in batches: the requests that arrive while one INSERT is in
   * flight go together in the next (one statement and one durable commit for all of them).
   */
  private readonly claims = new Batcher<ClaimInput, boolean>((items) => this.insertClaims(items), {
    maxBatch: 256,
    maxInFlight: 2,
    sameTurn: true,
  });

  /** Key lookups of the admissions in flight, in one query per batch. */
  private readonly keyLookups = new Batcher<{ publicId: string; country: string }, KeyFacts | undefined>(
    (items) => this.keyFactsMany(items),
    { maxBatch: 256, maxInFlight: 2, sameTurn: true },
  );

  constructor(private readonly pool: Pool) {}

  /**
   * Everything a scrub's admission decides on, from the presented key's public id, in one query: the
   * credential (read fresh on every request, so a revocation is seen at once) and the gate facts of the
   * key's organization for `country`.
   */
  keyFacts(publicId: string, country: string): Promise<KeyFacts | undefined> {
    return this.keyLookups.submit({ publicId, country });
  }

  private async keyFactsMany(
    items: { publicId: string; country: string }[],
  ): Promise<(KeyFacts | undefined)[]> {
    const r = await this.pool.query(
      `SELECT q.n, k.key_id, k.org_id, k.digest, k.revoked_at, o.rate_limit, ${GATE_SELECT}
       FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS q(public_id, country, n)
         JOIN admission.api_keys k ON k.public_id = q.public_id
         JOIN admission.organizations o ON o.org_id = k.org_id
         ${GATE_JOINS.replaceAll('$2', 'q.country')}`,
      [items.map((i) => i.publicId), items.map((i) => i.country)],
    );
    const out: (KeyFacts | undefined)[] = items.map(() => undefined);
    for (const row of r.rows) {
      out[Number(row.n) - 1] = {
        credential: {
          keyId: row.key_id,
          orgId: row.org_id,
          digest: row.digest,
          revoked: row.revoked_at !== null,
          rateLimit: row.rate_limit,
        },
        ...gateOf(row),
      };
    }
    return out;
  }

  /** The gate facts of an organization already authenticated, in one query. */
  async gateFacts(orgId: string, country: string): Promise<GateFacts> {
    const r = await this.pool.query(
      `SELECT ${GATE_SELECT}
       FROM (SELECT $1::uuid AS org_id) q
         LEFT JOIN admission.organizations o ON o.org_id = q.org_id
         ${GATE_JOINS}`,
      [orgId, country],
    );
    return gateOf(r.rows[0]);
  }

  // --- organizations -------------------------------------------------------------------------

  async createOrganization(name: string, activationComplete: boolean): Promise<string> {
    const orgId = randomUUID();
    await this.pool.query(
      'INSERT INTO admission.organizations (org_id, name, activation_complete) VALUES ($1, $2, $3)',
      [orgId, name, activationComplete],
    );
    return orgId;
  }

  async organization(orgId: string): Promise<OrganizationRow | undefined> {
    const r = await this.pool.query(`SELECT ${ORG_COLUMNS} FROM admission.organizations WHERE org_id = $1`, [
      orgId,
    ]);
    return r.rows[0] ? orgOf(r.rows[0]) : undefined;
  }

  async updateOrganization(
    orgId: string,
    change: { suspended?: boolean; activationComplete?: boolean; rateLimit?: number },
  ): Promise<OrganizationRow> {
    const r = await this.pool.query(
      `UPDATE admission.organizations SET
         suspended = COALESCE($2, suspended),
         activation_complete = COALESCE($3, activation_complete),
         rate_limit = COALESCE($4, rate_limit)
       WHERE org_id = $1 RETURNING ${ORG_COLUMNS}`,
      [orgId, change.suspended ?? null, change.activationComplete ?? null, change.rateLimit ?? null],
    );
    if (!r.rows[0]) throw new NotFound('organization not found');
    return orgOf(r.rows[0]);
  }

  // --- API keys ------------------------------------------------------------------------------

  async createApiKey(orgId: string, publicId: string, digest: Buffer): Promise<string> {
    if (!(await this.organization(orgId))) throw new NotFound('organization not found');
    const keyId = randomUUID();
    await this.pool.query(
      'INSERT INTO admission.api_keys (key_id, org_id, public_id, digest) VALUES ($1, $2, $3, $4)',
      [keyId, orgId, publicId, digest],
    );
    return keyId;
  }

  /** The credential of a public id, read fresh on every request: a revocation is seen at once. */
  async credential(publicId: string): Promise<KeyCredential | undefined> {
    const r = await this.pool.query(
      `SELECT k.key_id, k.org_id, k.digest, k.revoked_at, o.rate_limit
       FROM admission.api_keys k JOIN admission.organizations o ON o.org_id = k.org_id
       WHERE k.public_id = $1`,
      [publicId],
    );
    const row = r.rows[0];
    if (!row) return undefined;
    return {
      keyId: row.key_id,
      orgId: row.org_id,
      digest: row.digest,
      revoked: row.revoked_at !== null,
      rateLimit: row.rate_limit,
    };
  }

  async revokeApiKey(keyId: string): Promise<ApiKeyRow> {
    const r = await this.pool.query(
      `UPDATE admission.api_keys SET revoked_at = COALESCE(revoked_at, now())
       WHERE key_id = $1 RETURNING key_id, org_id, public_id, created_at, revoked_at`,
      [keyId],
    );
    if (!r.rows[0]) throw new NotFound('API key not found');
    return keyOf(r.rows[0]);
  }

  async listApiKeys(orgId: string): Promise<ApiKeyRow[]> {
    const r = await this.pool.query(
      `SELECT key_id, org_id, public_id, created_at, revoked_at FROM admission.api_keys
       WHERE org_id = $1 ORDER BY created_at, key_id`,
      [orgId],
    );
    return r.rows.map(keyOf);
  }

  // --- purchases -----------------------------------------------------------------------------

  async createPurchase(orgId: string, country: string, monthlyQuota: number): Promise<PurchaseRow> {
    if (!(await this.organization(orgId))) throw new NotFound('organization not found');
    try {
      const r = await this.pool.query(
        `INSERT INTO admission.purchases (purchase_id, org_id, country, status, monthly_quota)
         VALUES ($1, $2, $3, 'pending_payment', $4) RETURNING ${PURCHASE_COLUMNS}`,
        [randomUUID(), orgId, country, monthlyQuota],
      );
      return purchaseOf(r.rows[0]);
    } catch (error) {
      if ((error as { code?: string }).code === '23505')
        throw new Conflict('the organization already has an open purchase of this country');
      throw error;
    }
  }

  async purchase(purchaseId: string): Promise<PurchaseRow> {
    const r = await this.pool.query(
      `SELECT ${PURCHASE_COLUMNS} FROM admission.purchases WHERE purchase_id = $1`,
      [purchaseId],
    );
    if (!r.rows[0]) throw new NotFound('purchase not found');
    return purchaseOf(r.rows[0]);
  }

  /** Move a purchase; `from` lists the states the transition is allowed from. */
  async transitionPurchase(
    purchaseId: string,
    from: PurchaseState[],
    set: { status?: PurchaseState; activated?: boolean },
  ): Promise<PurchaseRow> {
    return inTransaction(this.pool, async (tx) => {
      const cur = await tx.query(
        `SELECT ${PURCHASE_COLUMNS} FROM admission.purchases WHERE purchase_id = $1 FOR UPDATE`,
        [purchaseId],
      );
      if (!cur.rows[0]) throw new NotFound('purchase not found');
      const p = purchaseOf(cur.rows[0]);
      const status = set.status ?? p.status;
      const activated = set.activated ?? p.activated;
      if (p.status === status && p.activated === activated) return p; // repeated: no change
      if (!from.includes(p.status)) throw new Conflict(`the purchase is ${p.status.replace('_', ' ')}`);
      const r = await tx.query(
        `UPDATE admission.purchases SET status = $2, activated = $3,
           paid_at = CASE WHEN $2 = 'active' AND paid_at IS NULL THEN now() ELSE paid_at END,
           activated_at = CASE WHEN $3 AND activated_at IS NULL THEN now() ELSE activated_at END,
           lapsed_at = CASE WHEN $2 = 'lapsed' THEN now() ELSE lapsed_at END
         WHERE purchase_id = $1 RETURNING ${PURCHASE_COLUMNS}`,
        [purchaseId, status, activated],
      );
      return purchaseOf(r.rows[0]);
    });
  }

  // --- maintenance windows -------------------------------------------------------------------

  async setMaintenance(country: string, until: Date): Promise<void> {
    await this.pool.query(
      `INSERT INTO admission.maintenance_windows (country, until) VALUES ($1, $2)
       ON CONFLICT (country) DO UPDATE SET until = EXCLUDED.until, set_at = now()`,
      [country, until],
    );
  }

  async clearMaintenance(country: string): Promise<void> {
    await this.pool.query('DELETE FROM admission.maintenance_windows WHERE country = $1', [country]);
  }

  async maintenanceWindows(): Promise<Map<string, Date>> {
    const r = await this.pool.query('SELECT country, until FROM admission.maintenance_windows');
    return new Map(r.rows.map((row) => [row.country as string, row.until as Date]));
  }

  async maintenanceUntil(country: string): Promise<Date | undefined> {
    const r = await this.pool.query('SELECT until FROM admission.maintenance_windows WHERE country = $1', [
      country,
    ]);
    return r.rows[0]?.until;
  }

  // --- idempotency ---------------------------------------------------------------------------

  /**
   * Claim (key, Idempotency-Key) for a new admission. Returns undefined when the claim was made, or
   * the existing record (read under a row lock, then released) when the key is already taken.
   * Two identical requests racing: the primary key lets exactly one INSERT through.
   */
  async claim(
    keyId: string,
    keyHash: Buffer,
    c: { fingerprint: string; kind: Kind; admissionId: string; jobId: string | null },
    attempt = 1,
  ): Promise<StoredClaim | undefined> {
    if (await this.claims.submit({ keyId, keyHash, ...c })) return undefined;
    const r = await this.pool.query(
      `SELECT fingerprint, kind, state, admission_id, job_id,
              (extract(epoch FROM now() - claimed_at) * 1000)::float8 AS age_ms
       FROM admission.idempotency_records WHERE key_id = $1 AND key_hash = $2`,
      [keyId, keyHash],
    );
    const row = r.rows[0];
    // Deleted between the two statements (an abort): claim again, a bounded number of times.
    if (!row) {
      if (attempt >= 3) throw new Error('idempotency claim kept changing');
      return this.claim(keyId, keyHash, c, attempt + 1);
    }
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
   * one batch: the primary key lets exactly the first through (ON CONFLICT DO NOTHING skips the later
   * row of the same statement too), which `admission_id` tells apart.
   */
  private async insertClaims(items: ClaimInput[]): Promise<boolean[]> {
    const r = await this.pool.query<{ admission_id: string }>(
      `INSERT INTO admission.idempotency_records
         (key_id, key_hash, fingerprint, kind, state, admission_id, job_id)
       SELECT key_id, key_hash, fingerprint, kind, 'in_progress', admission_id, job_id
       FROM unnest($1::uuid[], $2::bytea[], $3::text[], $4::smallint[], $5::uuid[], $6::uuid[])
         WITH ORDINALITY AS t(key_id, key_hash, fingerprint, kind, admission_id, job_id, n)
       ORDER BY n
       ON CONFLICT (key_id, key_hash) DO NOTHING
       RETURNING admission_id`,
      [
        items.map((i) => i.keyId),
        items.map((i) => i.keyHash),
        items.map((i) => i.fingerprint),
        items.map((i) => KIND_CODE[i.kind]),
        items.map((i) => i.admissionId),
        items.map((i) => i.jobId),
      ],
    );
    const made = new Set(r.rows.map((row) => row.admission_id));
    return items.map((i) => made.has(i.admissionId));
  }

  /**
   * Take over a stale claim: only when it is still the one we looked at (same admission id, still in
   * progress), so two retries racing for a stale claim cannot both win.
   */
  async takeOver(
    keyId: string,
    keyHash: Buffer,
    expectedAdmissionId: string,
    newAdmissionId: string,
  ): Promise<boolean> {
    const r = await this.pool.query(
      `UPDATE admission.idempotency_records SET admission_id = $4, claimed_at = now()
       WHERE key_id = $1 AND key_hash = $2 AND admission_id = $3 AND state = 'in_progress'`,
      [keyId, keyHash, expectedAdmissionId, newAdmissionId],
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

  async claimByAdmission(
    admissionId: string,
  ): Promise<{ kind: Kind; state: RecordState; jobId: string | null } | undefined> {
    const r = await this.pool.query(
      'SELECT kind, state, job_id FROM admission.idempotency_records WHERE admission_id = $1',
      [admissionId],
    );
    const row = r.rows[0];
    if (!row) return undefined;
    return { kind: KIND_OF[row.kind as number] ?? 'sync', state: row.state, jobId: row.job_id };
  }

  /** Claims by admission id, many at once (Complete in batches). */
  async claimsByAdmission(admissionIds: string[]): Promise<Map<string, { kind: Kind; state: RecordState }>> {
    const r = await this.pool.query(
      'SELECT admission_id, kind, state FROM admission.idempotency_records WHERE admission_id = ANY($1::uuid[])',
      [admissionIds],
    );
    return new Map(
      r.rows.map((row) => [
        row.admission_id as string,
        { kind: KIND_OF[row.kind as number] ?? 'sync', state: row.state },
      ]),
    );
  }

  /** Mark many v1 claims completed in one statement. */
  async markCompleted(admissionIds: string[]): Promise<void> {
    if (admissionIds.length === 0) return;
    await this.pool.query(
      "UPDATE admission.idempotency_records SET state = 'completed' WHERE admission_id = ANY($1::uuid[])",
      [admissionIds],
    );
  }

  async markClaim(admissionId: string, state: 'completed' | 'accepted', jobId?: string): Promise<boolean> {
    const r = await this.pool.query(
      `UPDATE admission.idempotency_records SET state = $2
       WHERE admission_id = $1 AND ($3::uuid IS NULL OR job_id = $3::uuid)`,
      [admissionId, state, jobId ?? null],
    );
    return r.rowCount === 1;
  }

  /** Delete records past retention, in batches; returns how many went. */
  async purgeIdempotency(retentionSeconds: number, batch = 1000): Promise<number> {
    let total = 0;
    for (;;) {
      const r = await this.pool.query(
        `DELETE FROM admission.idempotency_records WHERE ctid IN (
           SELECT ctid FROM admission.idempotency_records
           WHERE created_at < now() - make_interval(secs => $1) LIMIT $2)`,
        [retentionSeconds, batch],
      );
      total += r.rowCount ?? 0;
      if ((r.rowCount ?? 0) < batch) return total;
    }
  }
}
