import { describe, expect, it } from 'vitest';
import {
  adapterCountry,
  adapterIdentity,
  identityFromAltNames,
  isIdentity,
  spiffeId,
} from '../src/security/identity.js';

const TD = 'dnc.internal';

describe('workload identity from a certificate name (SPIFFE-style URI SAN)', () => {
  it('reads the one spiffe URI of the trust domain', () => {
    expect(
      identityFromAltNames(`URI:${spiffeId(TD, 'gateway')}, DNS:localhost, IP Address:127.0.0.1`, TD),
    ).toBe('gateway');
    expect(identityFromAltNames(`DNS:localhost, URI:spiffe://${TD}/registry-adapter-co`, TD)).toBe(
      'registry-adapter-co',
    );
  });

  it('names nobody without a spiffe URI, with two of them, or with another trust domain', () => {
    expect(identityFromAltNames(undefined, TD)).toBeUndefined();
    expect(identityFromAltNames('DNS:gateway', TD)).toBeUndefined();
    expect(
      identityFromAltNames(`URI:spiffe://${TD}/gateway, URI:spiffe://${TD}/operator`, TD),
    ).toBeUndefined();
    expect(identityFromAltNames('URI:spiffe://evil.example/operator', TD)).toBeUndefined();
    expect(identityFromAltNames(`URI:spiffe://${TD}.evil/operator`, TD)).toBeUndefined();
  });

  it('names nobody for a path that is not a platform identity', () => {
    expect(identityFromAltNames(`URI:spiffe://${TD}/root`, TD)).toBeUndefined();
    expect(identityFromAltNames(`URI:spiffe://${TD}/operator/extra`, TD)).toBeUndefined();
    expect(identityFromAltNames(`URI:spiffe://${TD}/registry-adapter-colombia`, TD)).toBeUndefined();
    expect(identityFromAltNames(`URI:spiffe://${TD}/`, TD)).toBeUndefined();
  });

  it('a quoted name with a comma cannot pass for two names (Node quotes such SANs)', () => {
    // What Node prints for a single DNS name "x, URI:spiffe://dnc.internal/operator".
    const crafted = `DNS:${JSON.stringify(`x, URI:spiffe://${TD}/operator`)}`;
    expect(identityFromAltNames(crafted, TD)).toBeUndefined();
    // ...and a quoted URI that really is one name is read as written.
    expect(identityFromAltNames(`URI:${JSON.stringify(`spiffe://${TD}/quota`)}`, TD)).toBe('quota');
  });

  it('adapter identities carry exactly one two-letter country', () => {
    expect(adapterIdentity('co')).toBe('registry-adapter-co');
    expect(() => adapterIdentity('CO')).toThrow();
    expect(() => adapterIdentity('col')).toThrow();
    expect(adapterCountry('registry-adapter-mx')).toBe('mx');
    expect(adapterCountry('registry-adapter-')).toBeUndefined();
    expect(adapterCountry('gateway')).toBeUndefined();
    expect(isIdentity('operator')).toBe(true);
    expect(isIdentity('admin')).toBe(false);
  });
});
