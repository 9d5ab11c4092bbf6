import { describe, expect, it } from 'vitest';
import { MAX_EMAIL, normalEmail } from '../src/domain/email.js';
import {
  hashesInProgress,
  hashPassword,
  MAX_CONCURRENT_HASHES,
  MAX_PASSWORD,
  MIN_PASSWORD,
  passwordProblem,
  SCRYPT_LOG_N,
  verifyPassword,
} from '../src/domain/password.js';
import { mayChange } from '../src/domain/roles.js';
import { isToken, newToken, sameSecret, tokenHash } from '../src/domain/tokens.js';
import { newTotpSecret, totpCode, totpStep } from '../src/domain/totp.js';

describe('passwords (scrypt)', () => {
  it('uses OWASP parameters by default: N=2^17, r=8, p=1', () => {
    expect(SCRYPT_LOG_N).toBe(17);
  });

  it('verifies the right password only; the stored string names its parameters and a random salt', async () => {
    const a = await hashPassword('correct horse battery', 10);
    const b = await hashPassword('correct horse battery', 10);
    expect(a).toMatch(/^scrypt\$ln=10,r=8,p=1\$[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}$/);
    expect(a).not.toBe(b);
    expect(await verifyPassword('correct horse battery', a)).toBe(true);
    expect(await verifyPassword('correct horse batterY', a)).toBe(false);
    expect(await verifyPassword('correct horse battery', 'plain text')).toBe(false);
  });

  it(`length: ${MIN_PASSWORD} and ${MAX_PASSWORD} characters pass, one less and one more do not; never the email`, () => {
    // Hard-to-guess strings at the limits (the blocklist refuses 'x'.repeat(n) whatever its length).
    const shortest = 'Kq7vLz2Wp9Xr';
    const longest =
      'amber quokka tiptoes past eleven brass lanterns while a mossy drumbeat hums under violet glaciers and nobody minds the fog a bit';
    expect([...shortest]).toHaveLength(MIN_PASSWORD);
    expect([...longest]).toHaveLength(MAX_PASSWORD);
    expect(passwordProblem(shortest, 'a@b.co')).toBeUndefined();
    expect(passwordProblem(shortest.slice(1), 'a@b.co')).toMatch(/at least/);
    expect(passwordProblem(longest, 'a@b.co')).toBeUndefined();
    expect(passwordProblem(`${longest}q`, 'a@b.co')).toMatch(/at most/);
    // Characters, not UTF-16 units: 12 emoji are 12 characters, 11 are too few.
    const emoji = [...'🔑🌵🚲🎻🐙🍋🧭🪁🦉🌋🎲🛶'];
    expect(passwordProblem(emoji.join(''), 'a@b.co')).toBeUndefined();
    expect(passwordProblem(emoji.slice(1).join(''), 'a@b.co')).toMatch(/at least/);
    expect(passwordProblem(' Owner@Example.com ', 'owner@example.com')).toMatch(/email/);
  });
});

describe('tokens', () => {
  it('are 256 random bits in base64url; only their SHA-256 is stored', () => {
    const t = newToken();
    expect(isToken(t)).toBe(true);
    expect(isToken(`${t}x`)).toBe(false);
    expect(tokenHash(t)).toHaveLength(32);
    expect(sameSecret(t, t)).toBe(true);
    expect(sameSecret(t, newToken())).toBe(false);
    expect(sameSecret(t, '')).toBe(false);
  });
});

describe('TOTP (RFC 6238)', () => {
  it('accepts the current step and one either side, and says which step matched', () => {
    const secret = newTotpSecret();
    const now = 1_800_000_000_000;
    const step = Math.floor(now / 30_000);
    expect(totpStep(secret, totpCode(secret, now), now)).toBe(step);
    expect(totpStep(secret, totpCode(secret, now - 30_000), now)).toBe(step - 1);
    expect(totpStep(secret, totpCode(secret, now + 30_000), now)).toBe(step + 1);
    expect(totpStep(secret, totpCode(secret, now + 90_000), now)).toBeUndefined();
    expect(totpStep(secret, '12345', now)).toBeUndefined();
    expect(totpStep(secret, 123456, now)).toBeUndefined();
  });

  it('matches the RFC 6238 test vector (SHA-1, T=59 s)', () => {
    // Secret "12345678901234567890" in base32; the RFC's 8-digit 94287082 ends in these 6 digits.
    expect(totpCode('GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ', 59_000)).toBe('287082');
  });
});

describe('emails and roles', () => {
  it('normalizes case and spaces, refuses what is not an address or too long', () => {
    expect(normalEmail('  Ana@Example.COM ')).toBe('ana@example.com');
    expect(normalEmail('ana@example')).toBeUndefined();
    expect(normalEmail('ana example.com')).toBeUndefined();
    expect(normalEmail(`${'a'.repeat(MAX_EMAIL - 12)}@example.com`)).toHaveLength(MAX_EMAIL);
    expect(normalEmail(`${'a'.repeat(MAX_EMAIL - 11)}@example.com`)).toBeUndefined();
  });

  it('members change nothing of the organization; owners everything', () => {
    for (const change of [
      'key.create',
      'key.revoke',
      'job.cancel',
      'member.invite',
      'member.remove',
    ] as const) {
      expect(mayChange('owner', change)).toBe(true);
      expect(mayChange('member', change)).toBe(false);
    }
  });
});

describe('hashing memory bound', () => {
  it(`runs at most ${MAX_CONCURRENT_HASHES} scrypt derivations at once; the others wait and all finish`, async () => {
    let most = 0;
    const sample = setInterval(() => {
      most = Math.max(most, hashesInProgress());
    }, 1);
    const all = Array.from({ length: 6 }, (_, i) => hashPassword(`password number ${i}`, 14));
    most = Math.max(most, hashesInProgress());
    const hashes = await Promise.all(all);
    clearInterval(sample);
    expect(most).toBe(MAX_CONCURRENT_HASHES);
    expect(hashesInProgress()).toBe(0);
    expect(new Set(hashes).size).toBe(6);
    expect(await verifyPassword('password number 3', hashes[3]!)).toBe(true);
  });
});
