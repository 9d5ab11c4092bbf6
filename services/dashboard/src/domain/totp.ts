import { Secret, TOTP } from 'otpauth';

/**
 * The optional second factor: RFC 6238 TOTP (SHA-1, 6 digits, 30-second steps), which every
 * authenticator app reads from an `otpauth://` URI. A code is accepted for the current step and one
 * step either side (clock drift); the step it matched is returned so the caller can refuse a replay.
 */
export const ISSUER = 'dnc-scrub';
const PERIOD = 30;

function totp(secret: string, label: string): TOTP {
  return new TOTP({
    issuer: ISSUER,
    label,
    algorithm: 'SHA1',
    digits: 6,
    period: PERIOD,
    secret: Secret.fromBase32(secret),
  });
}

export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

export function totpUri(secret: string, email: string): string {
  return totp(secret, email).toString();
}

/** The time step a code matches (now, or one step either side), or undefined. */
export function totpStep(secret: string, code: unknown, now = Date.now()): number | undefined {
  if (typeof code !== 'string' || !/^\d{6}$/.test(code)) return undefined;
  const delta = totp(secret, '').validate({ token: code, timestamp: now, window: 1 });
  if (delta === null) return undefined;
  return Math.floor(now / 1000 / PERIOD) + delta;
}

/** The code of a secret at a time (tests and the quick start's demo helper). */
export function totpCode(secret: string, now = Date.now()): string {
  return totp(secret, '').generate({ timestamp: now });
}
