import { createHmac } from 'node:crypto';
import type { Pool } from '@dnc/kit';

/** MACed under the secret to tell it again; a key's MAC has its own prefix (a NUL byte), never this text. */
const CHECK_TEXT = 'dnc-scrub idempotency-key secret check v1';

/**
 * Every idempotency record is found by its key's MAC under DNC_IDEMPOTENCY_KEY_SECRET. A process started
 * with another secret (a Secret recreated with a fresh random value, a typo, a restore) would find none of
 * them, and admit and charge again every exact retry for as long as they are kept: unlike a fingerprint
 * secret mismatch, which fails closed (409), this fails open, and silently. So the first process records a
 * MAC of a fixed text under its secret (table admission.idempotency_key_check), and one whose secret gives
 * another MAC refuses to start. Changing the secret on purpose: docs/deploy.md, "Idempotency-Key records".
 */
export async function checkIdempotencyKeySecret(pool: Pool, secret: string): Promise<void> {
  const mac = createHmac('sha256', secret).update(CHECK_TEXT, 'utf8').digest();
  // Two statements: the read's snapshot must see a row another process starting at once just recorded.
  await pool.query(
    'INSERT INTO admission.idempotency_key_check (check_mac) VALUES ($1) ON CONFLICT (singleton) DO NOTHING',
    [mac],
  );
  const r = await pool.query<{ check_mac: Buffer }>('SELECT check_mac FROM admission.idempotency_key_check');
  if (!r.rows[0]?.check_mac.equals(mac))
    throw new Error(
      "DNC_IDEMPOTENCY_KEY_SECRET is not the secret this database's idempotency records are keyed with: " +
        'every exact retry of them would be admitted and charged again. Start with the secret they were ' +
        'written under (docs/deploy.md, "Idempotency-Key records", on changing it deliberately)',
    );
}
