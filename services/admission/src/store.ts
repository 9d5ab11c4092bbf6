import { randomUUID } from 'node:crypto';
import { inTransaction, type Pool } from '@dnc/kit';
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

/** Postgres access of the admission schema. No other service reads these tables. */
export class AdmissionStore {
  constructor(private readonly pool: Pool) {}

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

  /** The open purchase of (org, country), else the latest lapsed one. */
  async purchaseFor(orgId: string, country: string): Promise<PurchaseRow | undefined> {
    const r = await this.pool.query(
      `SELECT ${PURCHASE_COLUMNS} FROM admission.purchases WHERE org_id = $1 AND country = $2
       ORDER BY (status <> 'lapsed') DESC, created_at DESC LIMIT 1`,
      [orgId, country],
    );
    return r.rows[0] ? purchaseOf(r.rows[0]) : undefined;
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
    const inserted = await this.pool.query(
      `INSERT INTO admission.idempotency_records
         (key_id, key_hash, fingerprint, kind, state, admission_id, job_id)
       VALUES ($1, $2, $3, $4, 'in_progress', $5, $6)
       ON CONFLICT (key_id, key_hash) DO NOTHING`,
      [keyId, keyHash, c.fingerprint, KIND_CODE[c.kind], c.admissionId, c.jobId],
    );
    if (inserted.rowCount === 1) return undefined;
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
