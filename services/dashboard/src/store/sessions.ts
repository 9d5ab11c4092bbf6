import { inTransaction, type Pool } from '@dnc/kit';
import { isToken, tokenHash } from '../domain/tokens.js';

export type SessionStage = 'mfa' | 'full';

export interface Session {
  memberId: string;
  orgId: string;
  stage: SessionStage;
  csrfToken: string;
  expiresAt: Date;
  /** The person proved who they are (sign-in or confirmation) within the last CONFIRMATION_MINUTES. */
  confirmedRecently: boolean;
}

/**
 * How long a sign-in or a confirmation (POST /api/session/confirm) stands for the owner's changes that
 * could hand the organization to someone else (session.ts `confirmedOwner`).
 */
export const CONFIRMATION_MINUTES = 10;

/** A session as its person sees it on the Account page (never its token or the token's hash). */
export interface SessionListing {
  id: string;
  stage: SessionStage;
  userAgent: string;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
  current: boolean;
}

/** What is kept of a User-Agent header: printable ASCII, at most 200 characters. */
export function keptUserAgent(header: string | undefined): string {
  return (header ?? '').replace(/[^\x20-\x7e]/g, '').slice(0, 200);
}

// biome-ignore lint/suspicious/noExplicitAny: a row of the listing's columns
function listingOf(row: any, current: boolean): SessionListing {
  return {
    id: row.public_id,
    stage: row.stage,
    userAgent: row.user_agent,
    createdAt: row.created_at,
    lastSeenAt: row.last_seen_at,
    expiresAt: row.expires_at,
    current,
  };
}

export interface SessionPolicy {
  idleMinutes: number;
  absoluteHours: number;
}

/**
 * Server-side sessions. A session lives until it is idle for `idleMinutes` or reaches `absoluteHours`,
 * whichever comes first; each request moves the idle deadline (never past the absolute one).
 */
export class SessionStore {
  constructor(
    private readonly pool: Pool,
    private readonly policy: SessionPolicy,
  ) {}

  /**
   * A new session of the member, only while its `sessionsEpoch` is still the one the caller read: false
   * when all its sessions were ended since (or it is gone), and nothing is created. The member row is
   * locked FOR SHARE, so an `endAll` either waits for this insert and then deletes the session, or has
   * bumped the epoch first and the insert finds no row.
   */
  async create(s: {
    tokenHash: Buffer;
    memberId: string;
    orgId: string;
    sessionsEpoch: string;
    stage: SessionStage;
    csrfToken: string;
    userAgent: string;
  }): Promise<boolean> {
    const r = await this.pool.query(
      `INSERT INTO dashboard.sessions (token_hash, member_id, org_id, stage, csrf_token, user_agent, expires_at)
       SELECT $1, m.member_id, m.org_id, $4, $5, $6, now() + make_interval(mins => $7)
       FROM dashboard.members m
       WHERE m.member_id = $2 AND m.org_id = $3 AND m.sessions_epoch = $8
       FOR SHARE`,
      [
        s.tokenHash,
        s.memberId,
        s.orgId,
        s.stage,
        s.csrfToken,
        keptUserAgent(s.userAgent),
        Math.min(this.policy.idleMinutes, this.policy.absoluteHours * 60),
        s.sessionsEpoch,
      ],
    );
    return r.rowCount === 1;
  }

  /** The person's live sessions, the most recently used first; `current` marks the caller's. */
  async list(memberId: string, current: Buffer): Promise<SessionListing[]> {
    const r = await this.pool.query(
      `SELECT public_id, stage, user_agent, created_at, last_seen_at, expires_at, token_hash = $2 AS current
       FROM dashboard.sessions WHERE member_id = $1 AND expires_at > now()
       ORDER BY last_seen_at DESC, created_at DESC LIMIT 100`,
      [memberId, current],
    );
    return r.rows.map((row) => listingOf(row, row.current));
  }

  /**
   * End one of the person's sessions by its id, never `keep` (the caller's own); the ended session's
   * listing, or undefined when the person has no such other session.
   */
  async endOne(memberId: string, id: string, keep: Buffer): Promise<SessionListing | undefined> {
    const r = await this.pool.query(
      `DELETE FROM dashboard.sessions WHERE member_id = $1 AND public_id = $2 AND token_hash <> $3
       RETURNING public_id, stage, user_agent, created_at, last_seen_at, expires_at`,
      [memberId, id, keep],
    );
    return r.rows[0] ? listingOf(r.rows[0], false) : undefined;
  }

  /** The live session of a token hash, its idle deadline moved forward; undefined when absent or over. */
  async touch(tokenHash: Buffer): Promise<Session | undefined> {
    const r = await this.pool.query(
      `UPDATE dashboard.sessions SET last_seen_at = now(),
         expires_at = LEAST(now() + make_interval(mins => $2), created_at + make_interval(hours => $3))
       WHERE token_hash = $1 AND expires_at > now()
       RETURNING member_id, org_id, stage, csrf_token, expires_at,
         confirmed_at > now() - make_interval(mins => $4) AS confirmed_recently`,
      [tokenHash, this.policy.idleMinutes, this.policy.absoluteHours, CONFIRMATION_MINUTES],
    );
    const row = r.rows[0];
    if (!row) return undefined;
    return {
      memberId: row.member_id,
      orgId: row.org_id,
      stage: row.stage,
      csrfToken: row.csrf_token,
      expiresAt: row.expires_at,
      confirmedRecently: row.confirmed_recently,
    };
  }

  /** The session's person proved who they are just now (POST /api/session/confirm). */
  async confirm(tokenHash: Buffer): Promise<void> {
    await this.pool.query('UPDATE dashboard.sessions SET confirmed_at = now() WHERE token_hash = $1', [
      tokenHash,
    ]);
  }

  async end(tokenHash: Buffer): Promise<void> {
    await this.pool.query('DELETE FROM dashboard.sessions WHERE token_hash = $1', [tokenHash]);
  }

  /**
   * Sign out everywhere: every session of the member, except `keep` when given; a sign-in still in flight
   * creates none after this (the epoch is bumped first, in its own statement, so the deletion's snapshot
   * sees a session whose insert this bump waited for). And every browser the member signed in from
   * (device cookies) but `keepDevice`, the one asking (found by a review, 2026-12-04: they outlived a
   * password change, the second factor turned on and this, so whoever once had the password kept up to 20
   * browsers whose guesses never counted against the email's lock).
   */
  async endAll(memberId: string, keep?: Buffer, keepDevice?: unknown): Promise<number> {
    return inTransaction(this.pool, async (tx) => {
      await tx.query(
        'UPDATE dashboard.members SET sessions_epoch = sessions_epoch + 1 WHERE member_id = $1',
        [memberId],
      );
      const r = await tx.query(
        'DELETE FROM dashboard.sessions WHERE member_id = $1 AND ($2::bytea IS NULL OR token_hash <> $2)',
        [memberId, keep ?? null],
      );
      await tx.query(
        'DELETE FROM dashboard.sign_in_devices WHERE member_id = $1 AND ($2::bytea IS NULL OR token_hash <> $2)',
        [memberId, isToken(keepDevice) ? tokenHash(keepDevice) : null],
      );
      return r.rowCount ?? 0;
    });
  }

  /** Delete sessions past their end (they are refused anyway; this keeps the table small). */
  async purgeExpired(): Promise<number> {
    const r = await this.pool.query('DELETE FROM dashboard.sessions WHERE expires_at < now()');
    return r.rowCount ?? 0;
  }
}
