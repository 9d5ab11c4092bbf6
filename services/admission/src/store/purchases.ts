import { randomUUID } from 'node:crypto';
import { inTransaction, type Pool } from '@dnc/kit';
import type { PurchaseState } from '../domain/check-order.js';
import { Conflict, NotFound } from './errors.js';

export interface PurchaseRow {
  purchaseId: string;
  orgId: string;
  country: string;
  status: PurchaseState;
  activated: boolean;
  monthlyQuota: number;
}

const PURCHASE_COLUMNS = 'purchase_id, org_id, country, status, activated, monthly_quota';

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

/**
 * Country purchases of organizations (table admission.purchases). At most one open purchase per
 * organization and country: a unique index enforces it (a second one is a Conflict).
 */
export class PurchaseStore {
  constructor(private readonly pool: Pool) {}

  /**
   * The organization must exist (checked by the caller: AccountStore.organization). The same purchase
   * asked again while it waits for payment (same quota) is answered with it: a creation whose answer
   * was lost, or whose quota limit failed after it was stored, is retried, not refused (a review,
   * 2026-12-05: the retry was a bare conflict, and no command could name the purchase to pay). Any other
   * open purchase of the country is a Conflict that names it.
   */
  async createPurchase(orgId: string, country: string, monthlyQuota: number): Promise<PurchaseRow> {
    try {
      const r = await this.pool.query(
        `INSERT INTO admission.purchases (purchase_id, org_id, country, status, monthly_quota)
         VALUES ($1, $2, $3, 'pending_payment', $4) RETURNING ${PURCHASE_COLUMNS}`,
        [randomUUID(), orgId, country, monthlyQuota],
      );
      return purchaseOf(r.rows[0]);
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === '23503') throw new NotFound('organization not found');
      if (code !== '23505') throw error;
    }
    const open = await this.pool.query(
      `SELECT ${PURCHASE_COLUMNS} FROM admission.purchases
       WHERE org_id = $1 AND country = $2 AND status <> 'lapsed'`,
      [orgId, country],
    );
    const existing = open.rows[0] ? purchaseOf(open.rows[0]) : undefined;
    if (existing?.status === 'pending_payment' && existing.monthlyQuota === monthlyQuota) return existing;
    throw new Conflict(
      existing
        ? `the organization already has an open purchase of this country: ${existing.purchaseId} (${existing.status}, monthly quota ${existing.monthlyQuota})`
        : 'the organization already has an open purchase of this country',
    );
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
}
