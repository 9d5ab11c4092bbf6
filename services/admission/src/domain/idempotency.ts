import { createHash, createHmac } from 'node:crypto';
import { IDEMPOTENCY_KEY_REGEXP } from '@dnc/api-contract/limits';
import { FINGERPRINT_VERSION_PATTERN } from '@dnc/kit';

/**
 * Idempotency decisions (spec: Idempotency). A record is keyed by (API key, keyed MAC of the
 * Idempotency-Key) and holds only the keyed fingerprint `<version>:<hex>` of (country, phones in order),
 * the request kind, its state and, for v2, the job identity. Nothing else of the request is kept.
 */
export type RecordState = 'in_progress' | 'completed' | 'accepted';
export type Kind = 'sync' | 'job';

export interface IdempotencyRecord {
  fingerprint: string;
  kind: Kind;
  state: RecordState;
  /** When the current owner claimed the key (renewed on reclaim). */
  claimedAtMs: number;
}

export interface Timeouts {
  /** A v1 claim still in progress after this belongs to a gateway that died: it may be reclaimed. */
  syncClaimMs: number;
  /** A v2 claim whose job was not confirmed within this is resumed with the same job identity. */
  jobClaimMs: number;
}

export type IdempotencyDecision =
  | { action: 'reused' }
  | { action: 'replay' }
  | { action: 'in_progress'; retryAfterSeconds: number }
  /** v1: the owner died; a new admission (new reservation) replaces the old one. */
  | { action: 'reclaim' }
  /** v2: the job may or may not be stored; the same job id and reservation are handed out again. */
  | { action: 'resume' };

const FINGERPRINT = new RegExp(`^(${FINGERPRINT_VERSION_PATTERN}):([0-9a-f]{64})$`);

/** 1 to 255 visible ASCII characters, no spaces (spec: Limits). */
export function isValidIdempotencyKey(key: string): boolean {
  return IDEMPOTENCY_KEY_REGEXP.test(key);
}

export function isValidFingerprint(fp: string): boolean {
  return FINGERPRINT.test(fp);
}

/**
 * How a record names its Idempotency-Key. The raw key is never stored. `mac` is an HMAC-SHA256 under
 * admission's DNC_IDEMPOTENCY_KEY_SECRET: "only a keyed non-reversible fingerprint is retained" (spec,
 * Idempotency 4), since a client that builds its keys from a phone number (`lead-+525512345678`) would
 * otherwise leave a hash anyone holding the table can reverse by trying every number. `legacy` is the
 * unkeyed SHA-256 that releases before it stored: looked up (their records are kept up to 31 days), and
 * written only in the `transition` form of an upgrade (store/claims.ts, docs/deploy.md). It is computed
 * only when the claim store asks for it, which it no longer does once no record carries a plain hash.
 */
export interface KeyNames {
  mac: Buffer;
  legacy(): Buffer;
}

/** The MAC's own prefix: no other HMAC under the same secret can be taken for a key's. */
const KEY_MAC_DOMAIN = 'dnc-scrub idempotency-key v1\u0000';

export function idempotencyKeyMac(secret: string, key: string): Buffer {
  return createHmac('sha256', secret).update(KEY_MAC_DOMAIN, 'utf8').update(key, 'utf8').digest();
}

export function keyNamesOf(secret: string, key: string): KeyNames {
  let legacy: Buffer | undefined;
  return {
    mac: idempotencyKeyMac(secret, key),
    legacy: () => {
      legacy ??= createHash('sha256').update(key, 'utf8').digest();
      return legacy;
    },
  };
}

function fingerprintVersion(fp: string): string {
  return fp.slice(0, fp.indexOf(':'));
}

/**
 * Same logical request? The stored fingerprint is compared with the presented fingerprint of its own
 * version: the current one, or during a secret rotation one of the previous versions the gateway
 * computed as well (`previous`). A record of a version the request was not fingerprinted with cannot
 * be compared, and is never taken for the same request: it is refused as reused. So the previous
 * secret stays configured on the gateways for the idempotency retention after a rotation (see README,
 * rotation), and an exact retry is replayed throughout.
 */
export function samePayload(stored: string, presented: string, previous: readonly string[] = []): boolean {
  const version = fingerprintVersion(stored);
  const comparable = [presented, ...previous].find((fp) => fingerprintVersion(fp) === version);
  return comparable === stored;
}

export function decideIdempotency(
  record: IdempotencyRecord,
  request: { fingerprint: string; kind: Kind; previousFingerprints?: readonly string[] },
  nowMs: number,
  timeouts: Timeouts,
): IdempotencyDecision {
  const same = samePayload(record.fingerprint, request.fingerprint, request.previousFingerprints);
  if (record.kind !== request.kind || !same) {
    return { action: 'reused' };
  }
  if (record.state === 'completed' || record.state === 'accepted') return { action: 'replay' };
  const bound = record.kind === 'sync' ? timeouts.syncClaimMs : timeouts.jobClaimMs;
  const age = nowMs - record.claimedAtMs;
  if (age >= bound) return { action: record.kind === 'sync' ? 'reclaim' : 'resume' };
  // Short: the original usually finishes in well under the bound; at least 1 s as the spec requires.
  return {
    action: 'in_progress',
    retryAfterSeconds: Math.min(5, Math.max(1, Math.ceil((bound - age) / 1000))),
  };
}
