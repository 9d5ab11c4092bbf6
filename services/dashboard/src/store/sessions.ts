import type { Pool, PoolClient } from '@dnc/kit';
import { isToken, tokenHash } from '../domain/tokens.js';
import { within } from './transaction.js';

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

/** What a new session is made of (`create`). */
export interface NewSession {
  tokenHash: Buffer;
  memberId: string;
  orgId: string;
  sessionsEpoch: string;
  stage: SessionStage;
  csrfToken: string;
  userAgent: string;
  /** When its sign-in was (now when unset): the absolute deadline counts from it. */
  createdAt?: Date;
  /** When its person last proved who they are (now when unset). */
  confirmedAt?: Date;
}

interface EndedSession {
  token_hash: Buffer;
  stage: SessionStage;
  created_at: Date;
  confirmed_at: Date;
  live: boolean;
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
  async create(s: NewSession): Promise<boolean> {
    return this.insert(this.pool, s);
  }

  private async insert(db: Pool | PoolClient, s: NewSession): Promise<boolean> {
    // The absolute deadline counts from `createdAt` (now for a sign-in, the sign-in's for a renewal).
    const r = await db.query(
      `INSERT INTO dashboard.sessions
         (token_hash, member_id, org_id, stage, csrf_token, user_agent, created_at, confirmed_at, expires_at)
       SELECT $1, m.member_id, m.org_id, $4, $5, $6, COALESCE($9::timestamptz, now()),
         COALESCE($10::timestamptz, now()),
         LEAST(now() + make_interval(mins => $7), COALESCE($9::timestamptz, now()) + make_interval(hours => $11))
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
        this.policy.idleMinutes,
        s.sessionsEpoch,
        s.createdAt ?? null,
        s.confirmedAt ?? null,
        this.policy.absoluteHours,
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
   * listing, or undefined when the person has no such other session. In the caller's transaction `tx` when
   * given (its audit row's), as `end` and `endAll`.
   */
  async endOne(
    memberId: string,
    id: string,
    keep: Buffer,
    tx?: PoolClient,
  ): Promise<SessionListing | undefined> {
    const r = await (tx ?? this.pool).query(
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

  async end(tokenHash: Buffer, tx?: PoolClient): Promise<void> {
    await (tx ?? this.pool).query('DELETE FROM dashboard.sessions WHERE token_hash = $1', [tokenHash]);
  }

  /**
   * Sign out everywhere: every session of the member, except `keep` when given; a sign-in still in flight
   * creates none after this (the epoch is bumped first, in its own statement, so the deletion's snapshot
   * sees a session whose insert this bump waited for). And every browser the member signed in from
   * (device cookies) but `keepDevice`, the one asking (found by a review, 2026-12-04: they outlived a
   * password change, the second factor turned on and this, so whoever once had the password kept up to 20
   * browsers whose guesses never counted against the email's lock). The number of sessions ended.
   */
  async endAll(memberId: string, keep?: Buffer, keepDevice?: unknown, tx?: PoolClient): Promise<number> {
    return within(
      this.pool,
      tx,
      async (tx) => (await this.endAllIn(tx, memberId, keep, keepDevice)).ended.length,
    );
  }

  /**
   * A new session for the browser of `current` after a change of the person's credentials (password,
   * second factor on or off). Found by a review (2026-12-05): those changes ended every other session but
   * kept this one's token, so a copy of the cookie taken earlier (OWASP: renew the session id after a
   * privilege change) outlived them. Now every session of the member ends as in `endAll`, `current` too,
   * and `next` replaces it in the same transaction: a crash between the two cannot sign the browser out.
   * `next` is created against the epoch this transaction bumped, the member row locked until it commits:
   * a sign-in in flight still creates no session, and an `endAll` after this one ends `next` as well. It
   * is the same sign-in under a new token (its stage and start, so its absolute deadline), confirmed now
   * when the change proved as much as POST /api/session/confirm would (`confirmed`), else as `current` was.
   * False, and nothing created, when `current` was no longer live (ended meanwhile from another session,
   * the member removed); the member's sessions end all the same. In the caller's transaction `tx` when
   * given: the change of credentials and its audit row are committed with the renewal.
   */
  async renew(
    memberId: string,
    current: Buffer,
    next: { tokenHash: Buffer; csrfToken: string; userAgent: string },
    options: { confirmed: boolean; keepDevice?: unknown },
    tx?: PoolClient,
  ): Promise<boolean> {
    return within(this.pool, tx, async (tx) => {
      const { member, ended } = await this.endAllIn(tx, memberId, undefined, options.keepDevice);
      // Ended here, so it was live until now: not ended meanwhile by another session.
      const renewed = ended.find((e) => e.token_hash.equals(current));
      if (!member || !renewed?.live) return false;
      return this.insert(tx, {
        ...next,
        memberId,
        orgId: member.org_id,
        sessionsEpoch: String(member.sessions_epoch),
        stage: renewed.stage,
        createdAt: renewed.created_at,
        confirmedAt: options.confirmed ? undefined : renewed.confirmed_at,
      });
    });
  }

  /**
   * `endAll` in a transaction: the member after the epoch's bump (undefined when it is gone) and the
   * sessions ended.
   */
  private async endAllIn(tx: PoolClient, memberId: string, keep?: Buffer, keepDevice?: unknown) {
    const bumped = await tx.query<{ org_id: string; sessions_epoch: string }>(
      `UPDATE dashboard.members SET sessions_epoch = sessions_epoch + 1 WHERE member_id = $1
       RETURNING org_id, sessions_epoch`,
      [memberId],
    );
    const ended = await tx.query<EndedSession>(
      `DELETE FROM dashboard.sessions WHERE member_id = $1 AND ($2::bytea IS NULL OR token_hash <> $2)
       RETURNING token_hash, stage, created_at, confirmed_at, expires_at > now() AS live`,
      [memberId, keep ?? null],
    );
    await tx.query(
      'DELETE FROM dashboard.sign_in_devices WHERE member_id = $1 AND ($2::bytea IS NULL OR token_hash <> $2)',
      [memberId, isToken(keepDevice) ? tokenHash(keepDevice) : null],
    );
    return { member: bumped.rows[0], ended: ended.rows };
  }

  /** Delete sessions past their end (they are refused anyway; this keeps the table small). */
  async purgeExpired(): Promise<number> {
    const r = await this.pool.query('DELETE FROM dashboard.sessions WHERE expires_at < now()');
    return r.rowCount ?? 0;
  }
}
