import { randomUUID } from 'node:crypto';
import { inTransaction, type Pool, type PoolClient } from '@dnc/kit';
import type { Role } from '../domain/roles.js';

export interface Invitation {
  invitationId: string;
  orgId: string;
  email: string;
  role: Role;
  invitedBy: string | null;
  createdAt: Date;
  expiresAt: Date;
  acceptedAt: Date | null;
  revokedAt: Date | null;
}

// biome-ignore lint/suspicious/noExplicitAny: pg rows
function invitationOf(r: any): Invitation {
  return {
    invitationId: r.invitation_id,
    orgId: r.org_id,
    email: r.email,
    role: r.role,
    invitedBy: r.invited_by,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    acceptedAt: r.accepted_at,
    revokedAt: r.revoked_at,
  };
}

/** One-time invitation links: only the token's hash is stored. */
export class InvitationStore {
  constructor(private readonly pool: Pool) {}

  /** In the caller's transaction `tx` when given (its audit row's), as `revoke`. */
  async create(
    i: {
      orgId: string;
      email: string;
      role: Role;
      tokenHash: Buffer;
      invitedBy: string | null;
      ttlHours: number;
    },
    tx?: PoolClient,
  ): Promise<Invitation | undefined> {
    // An owner's invitation is made only while they are still an owner of the organization: their row is
    // locked FOR SHARE, so a removal either waits and then revokes this invitation with their others, or
    // has removed them and nothing is made (undefined).
    const r = await (tx ?? this.pool).query(
      `INSERT INTO dashboard.invitations (invitation_id, org_id, email, role, token_hash, invited_by, expires_at)
       SELECT $1, $2, $3, $4, $5, $6, now() + make_interval(hours => $7)
       WHERE $6::uuid IS NULL OR EXISTS (
         SELECT 1 FROM dashboard.members
         WHERE member_id = $6::uuid AND org_id = $2 AND role = 'owner' FOR SHARE)
       RETURNING *`,
      [randomUUID(), i.orgId, i.email, i.role, i.tokenHash, i.invitedBy, i.ttlHours],
    );
    return r.rows[0] ? invitationOf(r.rows[0]) : undefined;
  }

  /** An invitation that can still be accepted: not accepted, not revoked, not expired. */
  async open(tokenHash: Buffer): Promise<Invitation | undefined> {
    const r = await this.pool.query(
      `SELECT * FROM dashboard.invitations WHERE token_hash = $1
         AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now()`,
      [tokenHash],
    );
    return r.rows[0] ? invitationOf(r.rows[0]) : undefined;
  }

  /**
   * Accept an open invitation exactly once: `work` (the member's creation) runs in the transaction
   * that marks it accepted, under its row lock. Undefined when the link is no longer open.
   */
  async accept<T>(
    tokenHash: Buffer,
    work: (tx: PoolClient, invitation: Invitation) => Promise<T>,
  ): Promise<{ invitation: Invitation; result: T } | undefined> {
    return inTransaction(this.pool, async (tx) => {
      const r = await tx.query(
        `SELECT * FROM dashboard.invitations WHERE token_hash = $1
           AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now() FOR UPDATE`,
        [tokenHash],
      );
      if (!r.rows[0]) return undefined;
      const invitation = invitationOf(r.rows[0]);
      const result = await work(tx, invitation);
      await tx.query('UPDATE dashboard.invitations SET accepted_at = now() WHERE invitation_id = $1', [
        invitation.invitationId,
      ]);
      // The other links to the same person close: one left open would let them back in, in its role,
      // after a removal (found by a review, 2026-12-04).
      await tx.query(
        `UPDATE dashboard.invitations SET revoked_at = now()
         WHERE org_id = $1 AND lower(email) = lower($2) AND accepted_at IS NULL AND revoked_at IS NULL`,
        [invitation.orgId, invitation.email],
      );
      return { invitation, result };
    });
  }

  /**
   * Invitations of the organization not accepted, revoked or expired, newest first, each with the email
   * of the member who sent it (null: the operator sent it).
   */
  async pending(orgId: string): Promise<(Invitation & { invitedByEmail: string | null })[]> {
    const r = await this.pool.query(
      `SELECT i.*, m.email AS invited_by_email FROM dashboard.invitations i
         LEFT JOIN dashboard.members m ON m.member_id = i.invited_by
       WHERE i.org_id = $1 AND i.accepted_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > now()
       ORDER BY i.created_at DESC LIMIT 200`,
      [orgId],
    );
    return r.rows.map((row) => ({ ...invitationOf(row), invitedByEmail: row.invited_by_email ?? null }));
  }

  /** Revoke a pending invitation of this organization; undefined for any other id. */
  async revoke(orgId: string, invitationId: string, tx?: PoolClient): Promise<Invitation | undefined> {
    const r = await (tx ?? this.pool).query(
      `UPDATE dashboard.invitations SET revoked_at = now()
       WHERE invitation_id = $1 AND org_id = $2 AND accepted_at IS NULL AND revoked_at IS NULL
       RETURNING *`,
      [invitationId, orgId],
    );
    return r.rows[0] ? invitationOf(r.rows[0]) : undefined;
  }
}
