import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  decideIdempotency,
  type IdempotencyRecord,
  idempotencyKeyMac,
  isValidFingerprint,
  isValidIdempotencyKey,
  keyNamesOf,
} from '../src/domain/idempotency.js';

const FP = `v1:${'a'.repeat(64)}`;
const OTHER = `v1:${'b'.repeat(64)}`;
const T = { syncClaimMs: 20_000, jobClaimMs: 10_000 };

function rec(over: Partial<IdempotencyRecord> = {}): IdempotencyRecord {
  return { fingerprint: FP, kind: 'sync', state: 'in_progress', claimedAtMs: 1_000_000, ...over };
}

describe('Idempotency-Key format (spec: 1 to 255 visible ASCII, no spaces)', () => {
  it('accepts 1 and 255 visible characters', () => {
    expect(isValidIdempotencyKey('a')).toBe(true);
    expect(isValidIdempotencyKey('~'.repeat(255))).toBe(true);
  });
  it('refuses empty, 256, spaces, tabs and non-ASCII', () => {
    for (const bad of ['', 'x'.repeat(256), 'a b', 'a\tb', 'clé', 'a\u00a0b']) {
      expect(isValidIdempotencyKey(bad)).toBe(false);
    }
  });
  it('the raw key is not stored: a keyed 32-byte MAC identifies the record (spec, Idempotency 4)', () => {
    const secret = 'a-secret-of-sixteen+';
    expect(idempotencyKeyMac(secret, 'order-1')).toHaveLength(32);
    expect(idempotencyKeyMac(secret, 'order-1').equals(idempotencyKeyMac(secret, 'order-2'))).toBe(false);
    // Keyed: another secret names the same key otherwise, and nobody without the secret can compute it
    // from a guess of the key (a plain SHA-256 of `lead-<phone>` is reversed by trying every phone).
    expect(idempotencyKeyMac(secret, 'order-1').equals(idempotencyKeyMac(`${secret}x`, 'order-1'))).toBe(
      false,
    );
    const plain = createHash('sha256').update('order-1').digest();
    expect(idempotencyKeyMac(secret, 'order-1').equals(plain)).toBe(false);
    // Its own domain: not the bare HMAC of the key, which another use of the secret could produce.
    expect(
      idempotencyKeyMac(secret, 'order-1').equals(createHmac('sha256', secret).update('order-1').digest()),
    ).toBe(false);
    // The legacy name is what releases before stored: the plain SHA-256, looked up only.
    const names = keyNamesOf(secret, 'order-1');
    expect(names.mac).toEqual(idempotencyKeyMac(secret, 'order-1'));
    expect(names.legacy()).toEqual(plain);
    expect(names.legacy()).toBe(names.legacy()); // computed once, when asked for
  });
  it('fingerprints carry a version', () => {
    expect(isValidFingerprint(FP)).toBe(true);
    expect(isValidFingerprint('a'.repeat(64))).toBe(false);
    expect(isValidFingerprint(`v1:${'A'.repeat(64)}`)).toBe(false);
  });
});

describe('idempotency decisions', () => {
  it('other country or phones (other fingerprint) -> key reused; so is another kind', () => {
    expect(
      decideIdempotency(rec({ state: 'completed' }), { fingerprint: OTHER, kind: 'sync' }, 1_000_001, T),
    ).toEqual({
      action: 'reused',
    });
    expect(decideIdempotency(rec(), { fingerprint: FP, kind: 'job' }, 1_000_001, T)).toEqual({
      action: 'reused',
    });
  });

  it('exact retry of a completed v1 request or accepted v2 job -> replay', () => {
    expect(
      decideIdempotency(rec({ state: 'completed' }), { fingerprint: FP, kind: 'sync' }, 9e12, T).action,
    ).toBe('replay');
    expect(
      decideIdempotency(rec({ kind: 'job', state: 'accepted' }), { fingerprint: FP, kind: 'job' }, 9e12, T)
        .action,
    ).toBe('replay');
  });

  it('original still running -> in progress with Retry-After >= 1', () => {
    const d = decideIdempotency(rec(), { fingerprint: FP, kind: 'sync' }, 1_000_000 + 19_999, T);
    expect(d).toEqual({ action: 'in_progress', retryAfterSeconds: 1 });
    const early = decideIdempotency(rec(), { fingerprint: FP, kind: 'sync' }, 1_000_000, T);
    expect(early.action).toBe('in_progress');
    expect((early as { retryAfterSeconds: number }).retryAfterSeconds).toBeGreaterThanOrEqual(1);
  });

  it('a v1 claim whose owner died becomes retryable by itself (reclaim after the bound)', () => {
    expect(decideIdempotency(rec(), { fingerprint: FP, kind: 'sync' }, 1_000_000 + 20_000, T).action).toBe(
      'reclaim',
    );
  });

  it('a v2 claim never confirmed is resumed with the same job after the bound', () => {
    const r = rec({ kind: 'job' });
    expect(decideIdempotency(r, { fingerprint: FP, kind: 'job' }, 1_000_000 + 9_999, T).action).toBe(
      'in_progress',
    );
    expect(decideIdempotency(r, { fingerprint: FP, kind: 'job' }, 1_000_000 + 10_000, T).action).toBe(
      'resume',
    );
  });

  it('across a fingerprint secret rotation the stored version is compared: an exact retry replays, anything else is reused', () => {
    const rotated = `v2:${'c'.repeat(64)}`;
    const completed = rec({ state: 'completed' });
    // The gateway presents the previous version of the same request: the very fingerprint stored.
    expect(
      decideIdempotency(completed, { fingerprint: rotated, previousFingerprints: [FP], kind: 'sync' }, 1, T)
        .action,
    ).toBe('replay');
    // Other phones under the same key: their previous-version fingerprint differs (issue 14 item 4).
    const other = `v1:${'d'.repeat(64)}`;
    expect(
      decideIdempotency(
        completed,
        { fingerprint: rotated, previousFingerprints: [other], kind: 'sync' },
        1,
        T,
      ).action,
    ).toBe('reused');
    // No fingerprint of the stored version presented: cannot be compared, never a free replay.
    expect(decideIdempotency(completed, { fingerprint: rotated, kind: 'sync' }, 1, T).action).toBe('reused');
  });
});
