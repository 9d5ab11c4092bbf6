import { createHmac } from 'node:crypto';
import type { PhoneSequence } from '@dnc/kit';

/** Phones hashed per piece: the fingerprint never holds a second copy of a 25 MiB body. */
const PIECE = 2_000;

/**
 * Keyed, non-reversible fingerprint of one logical scrub request: HMAC-SHA256 over the country and
 * the phones in order, as the JSON text `["<country>",["<phone>",...]]` (JSON makes the encoding
 * unambiguous). The text is fed to the HMAC in pieces, never built whole. Only this is ever stored;
 * the version prefix lets the secret rotate without confusing old records.
 */
export function fingerprint(
  secret: string,
  version: string,
  country: string,
  phones: PhoneSequence,
  /** `JSON.stringify(phones)` in UTF-8 when the caller has it (v2's durable input): hashed as is. */
  canonical?: Uint8Array,
): string {
  if (canonical) {
    const mac = createHmac('sha256', secret).update(`[${JSON.stringify(country)},`);
    return `${version}:${mac.update(canonical).update(']').digest('hex')}`;
  }
  const mac = createHmac('sha256', secret).update(`[${JSON.stringify(country)},[`);
  for (let i = 0; i < phones.length; i += PIECE) {
    const piece = JSON.stringify(piecesOf(phones, i, Math.min(phones.length, i + PIECE)));
    // The piece's own brackets dropped; pieces joined by the comma the whole array would have.
    mac.update(i === 0 ? piece.slice(1, -1) : `,${piece.slice(1, -1)}`);
  }
  return `${version}:${mac.update(']]').digest('hex')}`;
}

/** The phones from `from` to `to` (exclusive) as an array: a slice of an array, or made one by one. */
function piecesOf(phones: PhoneSequence, from: number, to: number): readonly (string | undefined)[] {
  if (Array.isArray(phones)) return phones.slice(from, to);
  const piece: (string | undefined)[] = [];
  for (let i = from; i < to; i++) piece.push(phones.at(i));
  return piece;
}
