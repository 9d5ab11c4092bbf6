import { inTransaction, type Pool } from '@dnc/kit';
import type { PurchaseState } from './domain/check-order.js';

/** An API key as its organization lists it. */
export interface OrganizationKeyRow {
  keyId: string;
  name: string;
  publicId: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export interface OrganizationPurchaseRow {
  purchaseId: string;
  country: string;
  status: PurchaseState;
  activated: boolean;
  monthlyQuota: number;
  createdAt: Date;
  paidAt: Date | null;
  activatedAt: Date | null;
  lapsedAt: Date | null;
}

/** Too many active keys: the organization revokes one first. */
export class KeyLimitReached extends Error {}
/** A key id given by the caller that a key already has. */
export class KeyIdTaken extends Error {}

const KEY_COLUMNS = 'key_id, name, public_id, created_at, last_used_at, revoked_at';

// biome-ignore lint/suspicious/noExplicitAny: pg rows
function keyOf(r: any): OrganizationKeyRow {
  return {
    keyId: r.key_id,
    name: r.name,
    publicId: r.public_id,
    createdAt: r.created_at,
    lastUsedAt: r.last_used_at,
    revokedAt: r.revoked_at,
  };
}

/** Revoked keys a listing shows, the most recently revoked first (every active key is shown). */
export const REVOKED_KEYS_LISTED = 100;

/**
 * The admission schema as one organization sees it (OrganizationService). Every statement is scoped by
 * `org_id`: a row of another organization is never read or written, it is simply not found.
 */
export class OrganizationStore {
  constructor(private readonly pool: Pool) {}

  /**
   * Every active key of the organization, and its `revokedShown` most recently revoked ones. Revoked
   * keys are kept, and nothing bounds how many an organization makes over time: listed whole, an
   * organization that created and revoked keys in a loop made each listing one answer of all of them
   * (hundreds of MB in admission's heap at a few hundred thousand).
   */
  async listKeys(orgId: string, revokedShown = REVOKED_KEYS_LISTED): Promise<OrganizationKeyRow[]> {
    const r = await this.pool.query(
      `(SELECT ${KEY_COLUMNS} FROM admission.api_keys WHERE org_id = $1 AND revoked_at IS NULL)
       UNION ALL
       (SELECT ${KEY_COLUMNS} FROM admission.api_keys WHERE org_id = $1 AND revoked_at IS NOT NULL
        ORDER BY revoked_at DESC, key_id LIMIT $2)
       ORDER BY created_at DESC, key_id`,
      [orgId, revokedShown],
    );
    return r.rows.map(keyOf);
  }

  /**
   * A new named key, unless the organization already has `maxActive` active keys. The count and the
   * insert run under a lock of the organization's row, so two concurrent creations cannot both pass.
   * Rolled back when `signal` has aborted once the row is written: a caller gone (its deadline passed
   * while the lock was waited for) would never receive the key's secret, and the key would stay active
   * with nobody holding it (found by a review, 2026-12-05).
   */
  async createKey(
    orgId: string,
    key: { keyId: string; name: string; publicId: string; digest: Buffer },
    maxActive: number,
    signal?: AbortSignal,
  ): Promise<OrganizationKeyRow | undefined> {
    return inTransaction(this.pool, async (tx) => {
      const org = await tx.query('SELECT 1 FROM admission.organizations WHERE org_id = $1 FOR UPDATE', [
        orgId,
      ]);
      if (org.rowCount === 0) return undefined;
      const active = await tx.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM admission.api_keys WHERE org_id = $1 AND revoked_at IS NULL',
        [orgId],
      );
      if ((active.rows[0]?.n ?? 0) >= maxActive) throw new KeyLimitReached();
      const r = await tx.query(
        `INSERT INTO admission.api_keys (key_id, org_id, name, public_id, digest) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (key_id) DO NOTHING RETURNING ${KEY_COLUMNS}`,
        [key.keyId, orgId, key.name, key.publicId, key.digest],
      );
      if (!r.rows[0]) throw new KeyIdTaken();
      signal?.throwIfAborted();
      return keyOf(r.rows[0]);
    });
  }

  /**
   * Revoke a key of this organization; again changes nothing. `revokedNow` says whether this call revoked
   * it (of two concurrent calls exactly one does: the second's UPDATE waits for the first's row lock and
   * then finds the key revoked). Undefined when the organization has no such key.
   */
  async revokeKey(
    orgId: string,
    keyId: string,
  ): Promise<{ key: OrganizationKeyRow; revokedNow: boolean } | undefined> {
    return inTransaction(this.pool, async (tx) => {
      // After any creation in flight for the organization (it holds the row FOR UPDATE until its COMMIT):
      // the dashboard revokes a key whose creation it gave up on, and an UPDATE alone would not see a row
      // whose COMMIT was on its way, leaving it active (found by a review, 2026-12-05).
      await tx.query('SELECT 1 FROM admission.organizations WHERE org_id = $1 FOR SHARE', [orgId]);
      const r = await tx.query(
        `UPDATE admission.api_keys SET revoked_at = now()
         WHERE key_id = $1 AND org_id = $2 AND revoked_at IS NULL RETURNING ${KEY_COLUMNS}`,
        [keyId, orgId],
      );
      if (r.rows[0]) return { key: keyOf(r.rows[0]), revokedNow: true };
      const known = await tx.query(
        `SELECT ${KEY_COLUMNS} FROM admission.api_keys WHERE key_id = $1 AND org_id = $2`,
        [keyId, orgId],
      );
      return known.rows[0] ? { key: keyOf(known.rows[0]), revokedNow: false } : undefined;
    });
  }

  async listPurchases(orgId: string): Promise<OrganizationPurchaseRow[]> {
    const r = await this.pool.query(
      `SELECT purchase_id, country, status, activated, monthly_quota, created_at, paid_at, activated_at,
              lapsed_at
       FROM admission.purchases WHERE org_id = $1 ORDER BY created_at DESC, purchase_id`,
      [orgId],
    );
    return r.rows.map((p) => ({
      purchaseId: p.purchase_id,
      country: p.country,
      status: p.status,
      activated: p.activated,
      monthlyQuota: p.monthly_quota,
      createdAt: p.created_at,
      paidAt: p.paid_at,
      activatedAt: p.activated_at,
      lapsedAt: p.lapsed_at,
    }));
  }
}
