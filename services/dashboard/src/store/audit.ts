import type { Pool } from '@dnc/kit';

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

  async record(orgId: string, actor: string, action: AuditAction, target = ''): Promise<void> {
    await this.pool.query(
      'INSERT INTO dashboard.audit_events (org_id, actor, action, target) VALUES ($1, $2, $3, $4)',
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
