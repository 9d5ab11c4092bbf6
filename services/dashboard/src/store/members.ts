import { randomUUID } from 'node:crypto';
import type { Pool, PoolClient } from '@dnc/kit';
import type { Role } from '../domain/roles.js';
import type { Sealed } from '../domain/sealing.js';
import { within } from './transaction.js';

export interface Member {
  memberId: string;
  orgId: string;
  email: string;
  role: Role;
  passwordHash: string;
  /** The second factor's seed, sealed (src/domain/sealing.ts), once it is on. */
  totp: Sealed | null;
  /** The seed being set up (sealed), until a first code turns it on. */
  totpPending: Sealed | null;
  totpLastStep: number | null;
  createdAt: Date;
  lastSignInAt: Date | null;
  /** Bumped whenever all the person's sessions end; a session is created only against the one read. */
  sessionsEpoch: string;
}

// biome-ignore lint/suspicious/noExplicitAny: pg rows
function memberOf(r: any): Member {
  return {
    memberId: r.member_id,
    orgId: r.org_id,
    email: r.email,
    role: r.role,
    passwordHash: r.password_hash,
    totp: r.totp_sealed ? { keyId: r.totp_key_id, sealed: r.totp_sealed } : null,
    totpPending: r.totp_pending_sealed
      ? { keyId: r.totp_pending_key_id, sealed: r.totp_pending_sealed }
      : null,
    totpLastStep: r.totp_last_step,
    createdAt: r.created_at,
    lastSignInAt: r.last_sign_in_at,
    sessionsEpoch: String(r.sessions_epoch),
  };
}

/** Consecutive failed sign-ins of one email that lock it, and for how long (the first lock of a run). */
export interface LockoutPolicy {
  limit: number;
  lockMinutes: number;
}

/**
 * Found by a review (2026-12-05): a lock started the count again from nothing, so `limit` guesses every
 * lock period went on for ever (480 a day per email at the defaults), and failures further apart than the
 * lock period were forgotten (4 every 16 minutes never locked). NIST SP 800-63B 5.2.2 allows at most 100
 * consecutive failures. Now a run of failures is kept until a success (`clearFailures`) or until
 * QUIET_HOURS pass without a failure and without a lock in force, and each lock of the run lasts twice the
 * one before, from the lock period up to MAX_LOCK_MINUTES: at the defaults (5 failures, 15 minutes) the
 * locks of a run last 15, 30, 60 minutes... 16 hours, then a day each, so a run allows at most 35
 * failures in its first day and 5 a day after it; waiting for it to be forgotten costs a day with none.
 */
export const MAX_LOCK_MINUTES = 24 * 60;
/** A day: longer than any lock, so a run is never forgotten while its last lock is in force. */
export const QUIET_HOURS = 24;

/**
 * The most failures a run of `policy` allows within its first day: `limit` before each lock that starts
 * within it (the attacker's best case, every guess made the moment a lock ends). The configuration keeps
 * it within NIST's 100 (config.ts).
 */
export function failuresInFirstDay(policy: LockoutPolicy): number {
  let locks = 0;
  for (let start = 0; start < 24 * 60; locks++)
    start += Math.min(policy.lockMinutes * 2 ** Math.min(locks, 16), MAX_LOCK_MINUTES);
  return policy.limit * locks;
}

/**
 * The SET list of one failure of a row aliased `t` (dashboard.sign_in_failures or sign_in_devices), with
 * parameters $2 limit, $3 lock minutes, $4 MAX_LOCK_MINUTES, $5 QUIET_HOURS: one statement, so concurrent
 * failures serialize on the row and all count. All the expressions read the row as it was (SQL's SET).
 */
export function failureSet(t: string): string {
  const live = `GREATEST(${t}.last_failure_at, ${t}.locked_until) > now() - make_interval(hours => $5)`;
  const failures = `CASE WHEN ${live} THEN ${t}.failures ELSE 0 END`;
  const locks = `CASE WHEN ${live} THEN ${t}.locks ELSE 0 END`;
  const locking = `${failures} + 1 >= $2`;
  // The lock that makes `locks + 1` locks lasts lock minutes * 2^locks, capped (the shift is bounded too).
  const minutes = `LEAST($3::int * (1 << LEAST(${locks}, 16)), $4::int)`;
  return `failures = CASE WHEN ${locking} THEN 0 ELSE ${failures} + 1 END,
    locks = CASE WHEN ${locking} THEN ${locks} + 1 ELSE ${locks} END,
    last_failure_at = now(),
    locked_until = CASE WHEN ${locking} THEN now() + make_interval(mins => ${minutes}) ELSE ${t}.locked_until END`;
}

/** The parameters $2..$5 of `failureSet`. */
export const failureParams = (policy: LockoutPolicy) => [
  policy.limit,
  policy.lockMinutes,
  MAX_LOCK_MINUTES,
  QUIET_HOURS,
];

/** Thrown when an email already belongs to a member (of any organization). */
export class EmailTaken extends Error {}

/** People of the dashboard and their sign-in failures. Reads of an organization are scoped by org_id. */
export class MemberStore {
  constructor(private readonly pool: Pool) {}

  async byEmail(email: string): Promise<Member | undefined> {
    const r = await this.pool.query('SELECT * FROM dashboard.members WHERE email = $1', [email]);
    return r.rows[0] ? memberOf(r.rows[0]) : undefined;
  }

  async byId(memberId: string): Promise<Member | undefined> {
    const r = await this.pool.query('SELECT * FROM dashboard.members WHERE member_id = $1', [memberId]);
    return r.rows[0] ? memberOf(r.rows[0]) : undefined;
  }

  async ofOrganization(orgId: string): Promise<Member[]> {
    const r = await this.pool.query('SELECT * FROM dashboard.members WHERE org_id = $1 ORDER BY created_at', [
      orgId,
    ]);
    return r.rows.map(memberOf);
  }

  /** Inside the transaction that accepts an invitation. */
  async create(
    tx: PoolClient,
    m: { orgId: string; email: string; role: Role; passwordHash: string },
  ): Promise<Member> {
    try {
      const r = await tx.query(
        `INSERT INTO dashboard.members (member_id, org_id, email, role, password_hash)
         VALUES ($1, $2, $3, $4, $5) RETURNING *`,
        [randomUUID(), m.orgId, m.email, m.role, m.passwordHash],
      );
      return memberOf(r.rows[0]);
    } catch (error) {
      if ((error as { code?: string }).code === '23505') throw new EmailTaken();
      throw error;
    }
  }

  /**
   * Remove a member of this organization, unless they are its last owner, and revoke the invitations
   * they sent or were sent that are still pending. 'absent' for an id that is not a member of this organization
   * (another organization's member is absent too). In the caller's transaction `tx` when given (its audit
   * row's).
   */
  async remove(orgId: string, memberId: string, tx?: PoolClient): Promise<Member | 'absent' | 'last_owner'> {
    return within(this.pool, tx, async (tx) => {
      // Lock the organization's members so two removals cannot leave it without an owner.
      const r = await tx.query(
        'SELECT * FROM dashboard.members WHERE org_id = $1 ORDER BY member_id FOR UPDATE',
        [orgId],
      );
      const members = r.rows.map(memberOf);
      const target = members.find((m) => m.memberId === memberId);
      if (!target) return 'absent';
      if (target.role === 'owner' && members.filter((m) => m.role === 'owner').length === 1)
        return 'last_owner';
      await tx.query('DELETE FROM dashboard.members WHERE member_id = $1', [memberId]);
      // Their links still pending go with them, those they sent and those sent to them: an invitation is
      // no way back in (found by reviews, 2026-12-03 and 2026-12-04).
      await tx.query(
        `UPDATE dashboard.invitations SET revoked_at = now()
         WHERE (invited_by = $1 OR (org_id = $2 AND lower(email) = lower($3)))
           AND accepted_at IS NULL AND revoked_at IS NULL`,
        [memberId, orgId, target.email],
      );
      return target;
    });
  }

  // The changes below run in the caller's transaction `tx` when given (the one of their audit row).

  async setPassword(memberId: string, passwordHash: string, tx?: PoolClient): Promise<void> {
    await (tx ?? this.pool).query('UPDATE dashboard.members SET password_hash = $2 WHERE member_id = $1', [
      memberId,
      passwordHash,
    ]);
  }

  async signedIn(memberId: string): Promise<void> {
    await this.pool.query('UPDATE dashboard.members SET last_sign_in_at = now() WHERE member_id = $1', [
      memberId,
    ]);
  }

  async setPendingTotp(memberId: string, pending: Sealed): Promise<void> {
    await this.pool.query(
      'UPDATE dashboard.members SET totp_pending_sealed = $2, totp_pending_key_id = $3 WHERE member_id = $1',
      [memberId, pending.sealed, pending.keyId],
    );
  }

  /**
   * The pending seed, if it is still the one that was read, becomes the second factor; `step` was just used.
   * `totp_secret` gets the marker a replica of the previous release fails closed on (migration
   * 1764000000000).
   */
  async enableTotp(memberId: string, pending: Sealed, step: number, tx?: PoolClient): Promise<boolean> {
    const r = await (tx ?? this.pool).query(
      `UPDATE dashboard.members SET totp_sealed = totp_pending_sealed, totp_key_id = totp_pending_key_id,
         totp_pending_sealed = NULL, totp_pending_key_id = NULL, totp_last_step = $3, totp_secret = '!sealed'
       WHERE member_id = $1 AND totp_pending_sealed = $2`,
      [memberId, pending.sealed, step],
    );
    // False when another set-up replaced the pending seed meanwhile: nothing was turned on.
    return r.rowCount === 1;
  }

  async disableTotp(memberId: string, tx?: PoolClient): Promise<void> {
    await (tx ?? this.pool).query(
      `UPDATE dashboard.members SET totp_sealed = NULL, totp_key_id = NULL, totp_pending_sealed = NULL,
         totp_pending_key_id = NULL, totp_last_step = NULL, totp_secret = NULL
       WHERE member_id = $1`,
      [memberId],
    );
  }

  /**
   * Record that a code of time step `step` was used, unless that step (or a later one) was used
   * already: false means the code is a replay.
   */
  async spendTotpStep(memberId: string, step: number): Promise<boolean> {
    const r = await this.pool.query(
      `UPDATE dashboard.members SET totp_last_step = $2
       WHERE member_id = $1 AND (totp_last_step IS NULL OR totp_last_step < $2)`,
      [memberId, step],
    );
    return r.rowCount === 1;
  }

  // --- sign-in failures (per email, known or not) --------------------------------------------

  /** Whether the email is locked out now. */
  async isLocked(email: string): Promise<boolean> {
    const r = await this.pool.query(
      'SELECT 1 FROM dashboard.sign_in_failures WHERE email = $1 AND locked_until > now()',
      [email],
    );
    return (r.rowCount ?? 0) > 0;
  }

  /**
   * Count one failed sign-in of `email`, in one statement (concurrent failures all count): the `limit`-th
   * consecutive one of the run locks the email, each lock of the run longer (`failureSet`). True when
   * this failure locked it.
   */
  async recordFailure(email: string, policy: LockoutPolicy): Promise<boolean> {
    // ON CONFLICT locks the email's row and reads its latest version: concurrent failures serialize.
    const r = await this.pool.query<{ locked: boolean }>(
      `INSERT INTO dashboard.sign_in_failures AS f (email, failures, locks, last_failure_at, locked_until)
       VALUES ($1, CASE WHEN $2 <= 1 THEN 0 ELSE 1 END, CASE WHEN $2 <= 1 THEN 1 ELSE 0 END, now(),
               CASE WHEN $2 <= 1 THEN now() + make_interval(mins => $3) END)
       ON CONFLICT (email) DO UPDATE SET ${failureSet('f')}
       RETURNING (locked_until IS NOT NULL AND locked_until > now()) AS locked`,
      [email, ...failureParams(policy)],
    );
    return r.rows[0]?.locked === true;
  }

  async clearFailures(email: string): Promise<void> {
    await this.pool.query('DELETE FROM dashboard.sign_in_failures WHERE email = $1', [email]);
  }

  /**
   * Delete the runs of failures that no longer count (QUIET_HOURS without a failure and without a lock in
   * force, as `failureSet` forgets them): each row is an email someone typed, a member's or not, kept no
   * longer than the lockout needs it. The lock period no longer decides it: a run and its escalation
   * outlive each lock.
   */
  async purgeForgottenFailures(): Promise<number> {
    const r = await this.pool.query(
      `DELETE FROM dashboard.sign_in_failures
       WHERE COALESCE(GREATEST(last_failure_at, locked_until), '-infinity') <= now() - make_interval(hours => $1)`,
      [QUIET_HOURS],
    );
    return r.rowCount ?? 0;
  }
}
