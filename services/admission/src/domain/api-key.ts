import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * API key format: `dnc_<public id: 12 hex>_<secret: 43 base64url chars = 256 random bits>`.
 * The `dnc_` prefix makes a leaked key recognizable to secret scanners; the public id locates the
 * key (it is the short prefix shown in listings) and the secret is checked against a stored SHA-256
 * digest in constant time. Only the public id and the digest are stored; the key is shown once.
 */
const KEY_PATTERN = /^dnc_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$/;

export interface ParsedKey {
  publicId: string;
  digest: Buffer;
}

export interface NewKey {
  apiKey: string;
  publicId: string;
  digest: Buffer;
}

export function digestOf(apiKey: string): Buffer {
  return createHash('sha256').update(apiKey, 'utf8').digest();
}

export function generateApiKey(random: (n: number) => Buffer = randomBytes): NewKey {
  const publicId = random(6).toString('hex');
  const secret = random(32).toString('base64url');
  const apiKey = `dnc_${publicId}_${secret}`;
  return { apiKey, publicId, digest: digestOf(apiKey) };
}

/** Undefined for anything that is not a well-formed key (no lookup is made for it). */
export function parseApiKey(presented: string): ParsedKey | undefined {
  if (presented.length !== 60) return undefined;
  const m = KEY_PATTERN.exec(presented);
  if (!m) return undefined;
  return { publicId: m[1]!, digest: digestOf(presented) };
}

/** The prefix shown in listings: recognizable, never enough to use the key. */
export function displayPrefix(publicId: string): string {
  return `dnc_${publicId}`;
}

const DUMMY = Buffer.alloc(32);

/**
 * Constant-time comparison of the presented digest with the stored one. With no stored digest (unknown
 * public id) a comparison still runs, so an unknown key and a wrong secret take the same time.
 */
export function digestMatches(presented: Buffer, stored: Buffer | undefined): boolean {
  const target = stored && stored.length === presented.length ? stored : DUMMY;
  const equal = timingSafeEqual(presented, target);
  return equal && target !== DUMMY;
}
