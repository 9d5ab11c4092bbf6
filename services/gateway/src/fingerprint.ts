import { createHmac } from 'node:crypto';

/**
 * Keyed, non-reversible fingerprint of one logical scrub request: HMAC-SHA256 over the country and
 * the phones in order (JSON makes the encoding unambiguous). Only this is ever stored; the version
 * prefix lets the secret rotate without confusing old records.
 */
export function fingerprint(
  secret: string,
  version: string,
  country: string,
  phones: readonly string[],
): string {
  const mac = createHmac('sha256', secret)
    .update(JSON.stringify([country, phones]))
    .digest('hex');
  return `${version}:${mac}`;
}
