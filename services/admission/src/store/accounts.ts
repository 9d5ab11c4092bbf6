import { randomUUID } from 'node:crypto';
import type { Pool } from '@dnc/kit';
import { Conflict, NotFound } from './errors.js';

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

/** What authentication checks a presented key against (steps 1-3 of the check order). */
export interface KeyCredential {
  keyId: string;
  orgId: string;
  digest: Buffer;
  revoked: boolean;
  rateLimit: number | null;
}

const ORG_COLUMNS = 'org_id, name, suspended, activation_complete, rate_limit, created_at';

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
function keyOf(r: any): ApiKeyRow {
  return {
    keyId: r.key_id,
    orgId: r.org_id,
    publicId: r.public_id,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
  };
}

// biome-ignore lint/suspicious/noExplicitAny: pg rows
export function credentialOf(r: any): KeyCredential {
  return {
    keyId: r.key_id,
    orgId: r.org_id,
    digest: r.digest,
    revoked: r.revoked_at !== null,
    rateLimit: r.rate_limit,
  };
}

/** Organizations and their API keys (tables admission.organizations and admission.api_keys). */
export class AccountStore {
  constructor(private readonly pool: Pool) {}

  /**
   * A new organization. With the caller's `orgId`, again is safe: the same id and name answer the
   * organization made the first time (its answer may have been lost); another name is a Conflict.
   */
  async createOrganization(
    name: string,
    activationComplete: boolean,
    orgId: string = randomUUID(),
  ): Promise<string> {
    const r = await this.pool.query(
      `INSERT INTO admission.organizations (org_id, name, activation_complete) VALUES ($1, $2, $3)
       ON CONFLICT (org_id) DO NOTHING`,
      [orgId, name, activationComplete],
    );
    if (r.rowCount === 1) return orgId;
    if ((await this.organization(orgId))?.name === name) return orgId;
    throw new Conflict('The organization id is in use.');
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

  /** The credential of a public id, read fresh on every request: a revocation is seen at once. */
  async credential(publicId: string): Promise<KeyCredential | undefined> {
    const r = await this.pool.query(
      `SELECT k.key_id, k.org_id, k.digest, k.revoked_at, o.rate_limit
       FROM admission.api_keys k JOIN admission.organizations o ON o.org_id = k.org_id
       WHERE k.public_id = $1`,
      [publicId],
    );
    return r.rows[0] ? credentialOf(r.rows[0]) : undefined;
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
}
