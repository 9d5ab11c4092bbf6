import type { Pool } from '@dnc/kit';
import { isToken, newToken, tokenHash } from '../domain/tokens.js';
import { failureParams, failureSet, type LockoutPolicy } from './members.js';

/** How long a browser stays known after its last sign-in, and how many a member keeps. */
export interface DevicePolicy {
  days: number;
  perMember: number;
}

/** Where the failures of a sign-in step count, and whose lock stops it. */
export interface FailureCount {
  isLocked(): Promise<boolean>;
  /** Count one failure; true when it locked. */
  recordFailure(): Promise<boolean>;
  clear(): Promise<void>;
}

/**
 * The browsers that signed in as a member (device cookies, OWASP's "Slow Down Online Guessing Attacks
 * with Device Cookies"). A browser presenting the token of the member whose email it signs in with counts
 * its failures here, under a lock of its own, instead of the email's: a stranger who locks the email with
 * wrong passwords no longer locks the member out of their own browsers. The token is random (256 bits);
 * only its SHA-256 is stored.
 */
export class DeviceStore {
  constructor(
    private readonly pool: Pool,
    private readonly policy: DevicePolicy,
  ) {}

  /** The hash of the presented token when it is a live device of the member whose email this is. */
  async trusted(token: unknown, email: string): Promise<Buffer | undefined> {
    if (!isToken(token)) return undefined;
    const hash = tokenHash(token);
    const r = await this.pool.query(
      `SELECT 1 FROM dashboard.sign_in_devices d JOIN dashboard.members m USING (member_id)
       WHERE d.token_hash = $1 AND m.email = $2 AND d.expires_at > now()`,
      [hash, email],
    );
    return r.rowCount ? hash : undefined;
  }

  async isLocked(hash: Buffer): Promise<boolean> {
    const r = await this.pool.query(
      'SELECT 1 FROM dashboard.sign_in_devices WHERE token_hash = $1 AND locked_until > now()',
      [hash],
    );
    return (r.rowCount ?? 0) > 0;
  }

  /**
   * Count one failure of the device, as MemberStore.recordFailure counts an email's (`failureSet`): the
   * `limit`-th consecutive failure of a run locks the device, each lock of the run longer than the one
   * before, and the run ends with a success or a quiet day. Concurrent failures serialize on the row (an
   * UPDATE re-reads the row it waited for).
   */
  async recordFailure(hash: Buffer, lockout: LockoutPolicy): Promise<boolean> {
    const r = await this.pool.query<{ locked: boolean }>(
      `UPDATE dashboard.sign_in_devices AS d SET ${failureSet('d')}
       WHERE token_hash = $1
       RETURNING (locked_until IS NOT NULL AND locked_until > now()) AS locked`,
      [hash, ...failureParams(lockout)],
    );
    return r.rows[0]?.locked === true;
  }

  async clearFailures(hash: Buffer): Promise<void> {
    await this.pool.query(
      'UPDATE dashboard.sign_in_devices SET failures = 0, locks = 0, last_failure_at = NULL WHERE token_hash = $1',
      [hash],
    );
  }

  /**
   * Remember this browser as one of the member's after a complete sign-in: the token it presented when it
   * is already theirs (its life starts again), else a new one. A member keeps the `perMember` most recently
   * used; older ones are forgotten (their browsers count against the email again).
   */
  async remember(memberId: string, presented: unknown): Promise<string> {
    const days = this.policy.days;
    if (isToken(presented)) {
      const r = await this.pool.query(
        `UPDATE dashboard.sign_in_devices SET expires_at = now() + make_interval(days => $3)
         WHERE token_hash = $1 AND member_id = $2 AND expires_at > now()`,
        [tokenHash(presented), memberId, days],
      );
      if (r.rowCount) return presented;
    }
    const token = newToken();
    await this.pool.query(
      `INSERT INTO dashboard.sign_in_devices (token_hash, member_id, expires_at)
       VALUES ($1, $2, now() + make_interval(days => $3))`,
      [tokenHash(token), memberId, days],
    );
    await this.pool.query(
      `DELETE FROM dashboard.sign_in_devices WHERE member_id = $1 AND token_hash NOT IN (
         SELECT token_hash FROM dashboard.sign_in_devices WHERE member_id = $1
         ORDER BY expires_at DESC LIMIT $2)`,
      [memberId, this.policy.perMember],
    );
    return token;
  }

  /** Delete the devices past their life (no longer trusted: their browsers count against the email). */
  async purgeExpired(): Promise<number> {
    const r = await this.pool.query('DELETE FROM dashboard.sign_in_devices WHERE expires_at <= now()');
    return r.rowCount ?? 0;
  }
}
