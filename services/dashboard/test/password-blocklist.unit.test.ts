import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { passwordProblem } from '../src/domain/password.js';

// Found by a review (2026-12-05): a new password was checked for its length only (and not being the email),
// so `password1234` or `aaaaaaaaaaaa` were accepted. NIST SP 800-63B 5.1.1.2: new passwords are compared
// against commonly used, expected or compromised values (src/domain/password.ts).
const EMAIL = 'jane.doe@acme-corp.com';

/** The refusal, checked to name neither the password nor the email. */
function refusal(password: string): string {
  const problem = passwordProblem(password, EMAIL);
  expect(problem, password).toMatch(/^The password is too easy to guess\./);
  expect(problem).not.toContain(password);
  for (const part of ['jane', 'doe', 'acme', 'corp']) expect(problem?.toLowerCase()).not.toContain(part);
  return problem!;
}

describe('new passwords are compared against common, expected and breached values', () => {
  it('refuses passwords of breach corpora and their usual variants', () => {
    for (const p of [
      'password1234',
      'Password123!',
      'P@ssw0rd2024!',
      'iloveyou2024',
      'letmein12345',
      'baseball2024',
    ])
      expect(refusal(p)).toMatch(/commonly used password/);
    // Full-width forms are judged as what they are (NFKC, as they are hashed).
    expect(refusal('ｐａｓｓｗｏｒｄ１２３４')).toMatch(/commonly used password/);
  });

  it('refuses repetitive, sequential and keyboard patterns, at any length', () => {
    expect(refusal('aaaaaaaaaaaa')).toMatch(/Repeated characters/);
    expect(refusal('x'.repeat(128))).toMatch(/Repeated characters/);
    expect(refusal('abcabcabcabc')).toMatch(/Repeated character patterns/);
    expect(refusal('123456789012')).toMatch(/commonly used password/);
    expect(refusal('abcdefghijklmnop')).toMatch(/character sequences/);
    expect(refusal('qwertyuiopasdf')).toMatch(/commonly used password/);
  });

  it("refuses the service's own words and well-known example passwords", () => {
    for (const p of [
      'dncscrub2026',
      'DoNotCall2026!',
      'Dashboard2026',
      'scrubbing123!',
      'correct horse battery staple',
    ])
      expect(refusal(p)).toMatch(/this service's name or a well-known example/);
  });

  it("refuses passwords built on the person's email address", () => {
    for (const p of ['janedoe12345', 'AcmeCorp2026!', 'Jane.Doe1990!'])
      expect(refusal(p)).toMatch(/part of your email address/);
  });

  it('accepts passphrases and random strings', () => {
    for (const p of [
      'correct horse battery',
      'purple otter canyon',
      'tenants kept far apart',
      'Kq7vLz2Wp9Xr',
      'a renewed long passphrase',
    ])
      expect(passwordProblem(p, EMAIL), p).toBeUndefined();
    // The demo stack's (scripts/stack/start.js): 12 random bytes in base64url.
    for (let i = 0; i < 50; i++) {
      const demo = randomBytes(12).toString('base64url');
      expect(passwordProblem(demo, 'owner@demo.example'), demo).toBeUndefined();
    }
  });

  it('stays fast on long adversarial passwords (it runs on the event loop)', () => {
    // Unbounded, each of these took about a second (l33t spellings of 128 characters).
    const adversarial = [
      'p@ssw0rd'.repeat(16),
      'aZ9$'.repeat(32),
      Array.from({ length: 128 }, (_, i) => '0o1il|!3e$5s7t@4a'[i % 17]).join(''),
      'Th1s 1s my l0ng s3cr3t p@ssphr@s3 w1th l33t @nd m0r3 w0rds t0 c0v3r 128 ch@r@ct3rs 0f typ1ng, 0k? y3s! @nd @ b1t m0r3 t3xt h3r3',
    ];
    passwordProblem('warm up the matchers once', EMAIL);
    const started = performance.now();
    for (const p of adversarial) passwordProblem(p, EMAIL);
    expect(performance.now() - started).toBeLessThan(1_500);
  });
});
