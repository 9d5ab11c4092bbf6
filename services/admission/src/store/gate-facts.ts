import { Batcher, type Pool } from '@dnc/kit';
import type { PurchaseState } from '../domain/check-order.js';
import { credentialOf, type KeyCredential } from './accounts.js';

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

// The gate facts of (org, country): the organization, its open purchase of the country (else the latest
// lapsed one) and the country's operator maintenance window. `$1` names the organization's row `o`.
const GATE_SELECT = `o.suspended, o.activation_complete, p.status AS purchase_status, p.activated,
         m.until AS maintenance_until`;
const GATE_JOINS = `LEFT JOIN LATERAL (
           SELECT status, activated FROM admission.purchases
           WHERE org_id = o.org_id AND country = $2
           ORDER BY (status <> 'lapsed') DESC, created_at DESC LIMIT 1) p ON true
         LEFT JOIN admission.maintenance_windows m ON m.country = $2`;

// The two reads of every scrub's admission, prepared once per connection (named statements): the
// server parses and plans them once instead of on every request.
const KEY_FACTS = `SELECT q.n, k.key_id, k.org_id, k.digest, k.revoked_at, o.rate_limit, ${GATE_SELECT}
       FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS q(public_id, country, n)
         JOIN admission.api_keys k ON k.public_id = q.public_id
         JOIN admission.organizations o ON o.org_id = k.org_id
         ${GATE_JOINS.replaceAll('$2', 'q.country')}`;
// Of an authenticated caller: also whether its key still acts for the organization (not revoked since).
const GATE_FACTS = `SELECT ${GATE_SELECT}, (k.key_id IS NOT NULL AND k.revoked_at IS NULL) AS key_active
       FROM (SELECT $1::uuid AS org_id) q
         LEFT JOIN admission.organizations o ON o.org_id = q.org_id
         LEFT JOIN admission.api_keys k ON k.key_id = $3::uuid AND k.org_id = q.org_id
         ${GATE_JOINS}`;

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

/**
 * The read side of a scrub's admission, across the accounts, purchases and maintenance tables: one
 * query for everything steps 1-7 decide on.
 */
export class GateFactsStore {
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
    const r = await this.pool.query({
      name: 'admission.key_facts',
      text: KEY_FACTS,
      values: [items.map((i) => i.publicId), items.map((i) => i.country)],
    });
    const out: (KeyFacts | undefined)[] = items.map(() => undefined);
    for (const row of r.rows) out[Number(row.n) - 1] = { credential: credentialOf(row), ...gateOf(row) };
    return out;
  }

  /**
   * The gate facts of an organization already authenticated, in one query; undefined when the key that
   * authenticated the request no longer acts for it (revoked since: a v2 body may take up to 45 s to
   * arrive after its authentication), so it admits nothing more.
   */
  async gateFacts(orgId: string, keyId: string, country: string): Promise<GateFacts | undefined> {
    const r = await this.pool.query({
      name: 'admission.gate_facts',
      text: GATE_FACTS,
      values: [orgId, country, keyId],
    });
    return r.rows[0].key_active === true ? gateOf(r.rows[0]) : undefined;
  }
}
