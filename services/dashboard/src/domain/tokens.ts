import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Bearer secrets of the dashboard (session cookies, invitation links): 256 random bits, base64url.
 * Only their SHA-256 is stored, so a read of the database gives no one a session or an invitation.
 */
export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export function isToken(value: unknown): value is string {
  return typeof value === 'string' && TOKEN.test(value);
}

export function tokenHash(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** Constant-time equality of two strings (CSRF tokens). */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}
