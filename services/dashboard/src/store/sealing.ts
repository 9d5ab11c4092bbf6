import { inTransaction, type Pool, type PoolClient } from '@dnc/kit';
import { type Sealed, type SealingKeys, Unopenable } from '../domain/sealing.js';

/** What `totp_secret` holds once a member's seed is sealed (migration 1764000000000): not base32. */
export const SEALED_MARKER = '!sealed';

export interface SealingReport {
  /** Members whose plaintext seed (of the first release) was sealed now. */
  sealed: number;
  /** Sealed values moved from a retired key to the active one. */
  resealed: number;
  /** Ids of keys that sealed values which cannot be opened (a key missing from, or wrong in, the ring). */
  unopenable: string[];
}

/**
 * The data migration of the TOTP seeds, run by the dashboard when it starts, before it serves (only it
 * has the key): seals the plaintext seeds of the first release, and re-seals under the active key the
 * values of a key that is no longer active (rotation). Replicas starting together take turns on an
 * advisory lock; the work is idempotent. A value that cannot be opened is left as it is and reported:
 * its member's sign-in fails closed until the right key is configured.
 */
export async function sealStoredSecrets(pool: Pool, keys: SealingKeys): Promise<SealingReport> {
  return inTransaction(pool, async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock(hashtext('dnc-dashboard-totp-sealing'))");
    const sealed = await sealPlaintext(tx, keys);
    const { resealed, unopenable } = await resealRetired(tx, keys);
    return { sealed, resealed, unopenable };
  });
}

async function sealPlaintext(tx: PoolClient, keys: SealingKeys): Promise<number> {
  const r = await tx.query<{
    member_id: string;
    totp_secret: string | null;
    totp_pending_secret: string | null;
  }>(
    `SELECT member_id, totp_secret, totp_pending_secret FROM dashboard.members
     WHERE totp_pending_secret IS NOT NULL OR (totp_secret IS NOT NULL AND totp_secret <> $1)
     FOR UPDATE`,
    [SEALED_MARKER],
  );
  for (const row of r.rows) {
    const active = row.totp_secret && row.totp_secret !== SEALED_MARKER ? row.totp_secret : null;
    const on = active ? keys.seal(active, row.member_id) : null;
    const pending = row.totp_pending_secret ? keys.seal(row.totp_pending_secret, row.member_id) : null;
    await tx.query(
      `UPDATE dashboard.members SET
         totp_sealed = COALESCE($2, totp_sealed), totp_key_id = COALESCE($3, totp_key_id),
         totp_pending_sealed = $4, totp_pending_key_id = $5,
         totp_secret = CASE WHEN totp_secret IS NULL THEN NULL ELSE $6 END, totp_pending_secret = NULL
       WHERE member_id = $1`,
      [
        row.member_id,
        on?.sealed ?? null,
        on?.keyId ?? null,
        pending?.sealed ?? null,
        pending?.keyId ?? null,
        SEALED_MARKER,
      ],
    );
  }
  return r.rows.length;
}

async function resealRetired(
  tx: PoolClient,
  keys: SealingKeys,
): Promise<{ resealed: number; unopenable: string[] }> {
  const r = await tx.query(
    `SELECT member_id, totp_sealed, totp_key_id, totp_pending_sealed, totp_pending_key_id
     FROM dashboard.members WHERE totp_key_id <> $1 OR totp_pending_key_id <> $1 FOR UPDATE`,
    [keys.activeId],
  );
  let resealed = 0;
  const unopenable = new Set<string>();
  const reseal = (value: Sealed | null, memberId: string): Sealed | null => {
    if (!value || value.keyId === keys.activeId) return value;
    try {
      const fresh = keys.seal(keys.open(value, memberId), memberId);
      resealed += 1;
      return fresh;
    } catch (error) {
      if (!(error instanceof Unopenable)) throw error;
      unopenable.add(value.keyId);
      return value;
    }
  };
  for (const row of r.rows) {
    const on = reseal(
      row.totp_sealed ? { keyId: row.totp_key_id, sealed: row.totp_sealed } : null,
      row.member_id,
    );
    const pending = reseal(
      row.totp_pending_sealed ? { keyId: row.totp_pending_key_id, sealed: row.totp_pending_sealed } : null,
      row.member_id,
    );
    await tx.query(
      `UPDATE dashboard.members SET totp_sealed = $2, totp_key_id = $3, totp_pending_sealed = $4,
         totp_pending_key_id = $5 WHERE member_id = $1`,
      [row.member_id, on?.sealed ?? null, on?.keyId ?? null, pending?.sealed ?? null, pending?.keyId ?? null],
    );
  }
  return { resealed, unopenable: [...unopenable].sort() };
}
