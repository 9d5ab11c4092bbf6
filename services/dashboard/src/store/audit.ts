import type { Pool, PoolClient } from '@dnc/kit';

/** What the audit log records. */
export type AuditAction =
  | 'sign_in'
  | 'sign_in_failed'
  | 'sign_out'
  | 'sign_out_everywhere'
  | 'session_ended'
  | 'password_changed'
  | 'totp_enabled'
  | 'totp_disabled'
  | 'invitation_created'
  | 'invitation_revoked'
  | 'invitation_accepted'
  | 'member_removed'
  | 'key_created'
  | 'key_revoked'
  | 'job_cancelled';

export interface AuditEvent {
  /** The event's id as its organization sees it (a random UUID; the sequence behind the order is not shown). */
  id: string;
  at: Date;
  actor: string;
  action: AuditAction;
  target: string;
}

/** Most events listed at once. */
export const AUDIT_PAGE = 200;

/** Each organization's own audit log: who did what and when. Never a secret, never a phone number. */
export class AuditLog {
  constructor(private readonly pool: Pool) {}

  /**
   * One event. A change of the dashboard's own data is recorded in the transaction `tx` that makes it
   * (store/transaction.ts): the row is committed with the change or neither is. Without `tx` (a failed
   * sign-in, a sign-in, a change made by another service) the row is written on its own.
   */
  async record(
    orgId: string,
    actor: string,
    action: AuditAction,
    target = '',
    tx?: PoolClient,
  ): Promise<void> {
    // The time of the insert, not of its transaction's start (`now()`): a change may wait on row locks
    // before its row is written, and the log, ordered by insert, would show times out of order.
    await (tx ?? this.pool).query(
      `INSERT INTO dashboard.audit_events (org_id, actor, action, target, at)
       VALUES ($1, $2, $3, $4, clock_timestamp())`,
      [orgId, actor, action, target],
    );
  }

  /**
   * Newest first; `before` (an event's id) pages back from that event. An id that is not an event of this
   * organization gives an empty page: another organization's cursor shows nothing.
   */
  async list(orgId: string, before?: string): Promise<AuditEvent[]> {
    const r = await this.pool.query(
      `SELECT public_id, at, actor, action, target FROM dashboard.audit_events
       WHERE org_id = $1 AND ($2::uuid IS NULL OR event_id < (
         SELECT event_id FROM dashboard.audit_events WHERE public_id = $2 AND org_id = $1))
       ORDER BY event_id DESC LIMIT $3`,
      [orgId, before ?? null, AUDIT_PAGE],
    );
    return r.rows.map((row) => ({
      id: row.public_id,
      at: row.at,
      actor: row.actor,
      action: row.action,
      target: row.target,
    }));
  }
}
