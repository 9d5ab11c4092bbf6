import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalCa } from '@dnc/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Identity } from '../src/security/identity.js';
import {
  encodeOrgAssertion,
  ORG_ASSERTION_TTL_MS,
  OrgAssertionIssuer,
  OrgAssertionVerifier,
} from '../src/security/org-assertion.js';
import type { Security } from '../src/security/security.js';
import { TlsMaterial } from '../src/security/tls-material.js';

const TD = 'dnc.internal';
let dir: string;
let ca: LocalCa;

async function securityOf(identity: Identity, authority = ca): Promise<Security & { mode: 'mtls' }> {
  const d = path.join(dir, `${identity}-${Math.random().toString(36).slice(2)}`);
  await authority.writeIdentity(d, identity);
  const material = TlsMaterial.load(d, TD, identity);
  return { mode: 'mtls', identity, trustDomain: TD, material };
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-orgassert-'));
  ca = await LocalCa.create({ trustDomain: TD });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("organization assertions (admission's signature of the organization a caller acts for)", () => {
  it('lets the holder act for the asserted organization at the audience, and nothing else', async () => {
    const issuer = new OrgAssertionIssuer(await securityOf('admission'));
    const verifier = new OrgAssertionVerifier(await securityOf('job-scheduler'), 'job-scheduler');
    const token = issuer.issue('org-a', 'gateway', ['job-scheduler']);
    expect(verifier.check(token, 'gateway', 'org-a')).toEqual({ ok: true });
    // Cached: the same answer the second time.
    expect(verifier.check(token, 'gateway', 'org-a')).toEqual({ ok: true });
    expect(verifier.check(token, 'gateway', 'org-b')).toEqual({ ok: false, reason: 'wrong_organization' });
    expect(verifier.check(token, 'dashboard', 'org-a')).toEqual({ ok: false, reason: 'wrong_holder' });
    expect(verifier.check(undefined, 'gateway', 'org-a')).toEqual({ ok: false, reason: 'missing' });
    const quota = new OrgAssertionVerifier(await securityOf('quota'), 'quota');
    expect(quota.check(token, 'gateway', 'org-a')).toEqual({ ok: false, reason: 'wrong_audience' });
  });

  it('one bound to an API key acts for that key only; one without (before keys were bound) for any', async () => {
    const issuer = new OrgAssertionIssuer(await securityOf('admission'));
    const verifier = new OrgAssertionVerifier(await securityOf('admission'), 'admission');
    const now = Date.now();
    const k1 = issuer.issue('org-a', 'gateway', ['admission'], now, 'key-1');
    expect(verifier.check(k1, 'gateway', 'org-a', now, 'key-1')).toEqual({ ok: true });
    expect(verifier.check(k1, 'gateway', 'org-a', now, 'key-2')).toEqual({ ok: false, reason: 'wrong_key' });
    // Services that name no key (the job scheduler's JobsService) check the organization only.
    expect(verifier.check(k1, 'gateway', 'org-a', now)).toEqual({ ok: true });
    // One per key: another key of the organization gets its own.
    expect(issuer.issue('org-a', 'gateway', ['admission'], now, 'key-2')).not.toBe(k1);
    const legacy = issuer.issue('org-a', 'gateway', ['admission'], now);
    expect(verifier.check(legacy, 'gateway', 'org-a', now, 'key-2')).toEqual({ ok: true });
  });

  it('refuses an expired assertion, even one verified while it was valid', async () => {
    const issuer = new OrgAssertionIssuer(await securityOf('admission'));
    const verifier = new OrgAssertionVerifier(await securityOf('job-scheduler'), 'job-scheduler');
    const t0 = Date.now();
    const token = issuer.issue('org-a', 'gateway', ['job-scheduler'], t0);
    expect(verifier.check(token, 'gateway', 'org-a', t0 + 1_000)).toEqual({ ok: true });
    expect(verifier.check(token, 'gateway', 'org-a', t0 + ORG_ASSERTION_TTL_MS)).toEqual({
      ok: false,
      reason: 'expired',
    });
    const old = issuer.issue('org-b', 'gateway', ['job-scheduler'], t0 - ORG_ASSERTION_TTL_MS - 1);
    expect(verifier.check(old, 'gateway', 'org-b', t0)).toEqual({ ok: false, reason: 'expired' });
  });

  it('re-uses an assertion while it has half its life left, then signs a new one', async () => {
    const issuer = new OrgAssertionIssuer(await securityOf('admission'));
    const t0 = Date.now();
    const first = issuer.issue('org-a', 'gateway', ['job-scheduler'], t0);
    expect(issuer.issue('org-a', 'gateway', ['job-scheduler'], t0 + ORG_ASSERTION_TTL_MS / 2)).toBe(first);
    expect(issuer.issue('org-b', 'gateway', ['job-scheduler'], t0)).not.toBe(first);
    expect(issuer.issue('org-a', 'gateway', ['job-scheduler'], t0 + ORG_ASSERTION_TTL_MS / 2 + 1)).not.toBe(
      first,
    );
  });

  it('refuses forgeries: another signer, another CA, an altered payload, garbage', async () => {
    const verifier = new OrgAssertionVerifier(await securityOf('job-scheduler'), 'job-scheduler');
    const now = Date.now();
    const claims = {
      v: 1 as const,
      org: 'org-a',
      sub: 'gateway',
      aud: ['job-scheduler'],
      iat: now,
      exp: now + 60_000,
    };
    // The gateway signing its own assertion: a valid certificate of the platform, not admission's.
    const gateway = await securityOf('gateway');
    const selfSigned = encodeOrgAssertion(claims, (d) => gateway.material.sign(d));
    expect(verifier.check(selfSigned, 'gateway', 'org-a')).toEqual({ ok: false, reason: 'wrong_signer' });
    // An "admission" certificate of another CA.
    const foreign = await securityOf('admission', await LocalCa.create({ trustDomain: TD }));
    const foreignToken = encodeOrgAssertion(claims, (d) => foreign.material.sign(d));
    expect(verifier.check(foreignToken, 'gateway', 'org-a')).toEqual({ ok: false, reason: 'bad_signature' });
    // A genuine assertion of org-b with its payload rewritten to org-a.
    const admission = await securityOf('admission');
    const genuine = new OrgAssertionIssuer(admission).issue('org-b', 'gateway', ['job-scheduler']);
    const [, sig, cert] = genuine.split('.');
    const altered = `${Buffer.from(JSON.stringify({ ...claims })).toString('base64url')}.${sig}.${cert}`;
    expect(verifier.check(altered, 'gateway', 'org-a')).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifier.check('not-a-token', 'gateway', 'org-a')).toEqual({ ok: false, reason: 'malformed' });
    expect(verifier.check('a.b.c', 'gateway', 'org-a')).toEqual({ ok: false, reason: 'malformed' });
  });

  it('is off in plaintext mode (development only): no token issued, none required', () => {
    const plain: Security = { mode: 'plaintext', identity: 'admission', trustDomain: TD };
    expect(new OrgAssertionIssuer(plain).issue('org-a', 'gateway', ['job-scheduler'])).toBe('');
    const verifier = new OrgAssertionVerifier({ ...plain, identity: 'job-scheduler' }, 'job-scheduler');
    expect(verifier.check(undefined, 'gateway', 'org-a')).toEqual({ ok: true });
  });
});
