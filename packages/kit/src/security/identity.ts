import type { X509Certificate } from 'node:crypto';

/**
 * Workload identities. Every process of the platform has exactly one, carried as a SPIFFE-style
 * URI in its certificate's subject alternative names: `spiffe://<trust domain>/<identity>`.
 * A country adapter is `registry-adapter-<cc>`; the person at `dnc-admin` is `operator`;
 * `conformance` is the adapter chart's `helm test` Pod (and the conformance kit), which only reads.
 */
export const PLATFORM_IDENTITIES = [
  'gateway',
  'admission',
  'quota',
  'job-scheduler',
  'job-worker',
  'operator',
  'dashboard',
  'conformance',
] as const;

export type PlatformIdentity = (typeof PLATFORM_IDENTITIES)[number];
export type AdapterIdentity = `registry-adapter-${string}`;
export type Identity = PlatformIdentity | AdapterIdentity;

export const DEFAULT_TRUST_DOMAIN = 'dnc.internal';

const COUNTRY = /^[a-z]{2}$/;
const TRUST_DOMAIN = /^[a-z0-9._-]{1,255}$/;

export function adapterIdentity(country: string): AdapterIdentity {
  if (!COUNTRY.test(country)) throw new Error(`not a country code: ${country}`);
  return `registry-adapter-${country}`;
}

/** The country an adapter identity serves, or undefined for any other identity. */
export function adapterCountry(identity: string): string | undefined {
  const m = /^registry-adapter-([a-z]{2})$/.exec(identity);
  return m?.[1];
}

export function isIdentity(value: string): value is Identity {
  return (PLATFORM_IDENTITIES as readonly string[]).includes(value) || adapterCountry(value) !== undefined;
}

export function isTrustDomain(value: string): boolean {
  return TRUST_DOMAIN.test(value);
}

export function spiffeId(trustDomain: string, identity: Identity): string {
  return `spiffe://${trustDomain}/${identity}`;
}

/**
 * The identity named by a certificate: its one `spiffe://<trust domain>/<identity>` URI SAN.
 * Undefined when there is none, more than one, another trust domain, or a name that is not a
 * platform identity: such a certificate authenticates nobody.
 */
export function identityFromAltNames(
  altNames: string | undefined,
  trustDomain: string,
): Identity | undefined {
  if (!altNames) return undefined;
  const uris = splitAltNames(altNames)
    .filter((n) => n.startsWith('URI:'))
    .map((n) => n.slice(4))
    .filter((u) => u.startsWith('spiffe://'));
  if (uris.length !== 1) return undefined;
  const prefix = `spiffe://${trustDomain}/`;
  const uri = uris[0]!;
  if (!uri.startsWith(prefix)) return undefined;
  const name = uri.slice(prefix.length);
  return isIdentity(name) ? name : undefined;
}

export function identityOfCertificate(cert: X509Certificate, trustDomain: string): Identity | undefined {
  return identityFromAltNames(cert.subjectAltName, trustDomain);
}

/**
 * Node renders subject alternative names as `URI:a, DNS:b`, quoting (JSON) any name that holds a
 * comma or a quote, so a crafted name cannot pass for two.
 */
function splitAltNames(text: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    const colon = text.indexOf(':', i);
    if (colon < 0) break;
    const type = text.slice(i, colon);
    let value: string;
    let end: number;
    if (text[colon + 1] === '"') {
      // JSON string: find its closing quote, honoring escapes.
      let j = colon + 2;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      try {
        value = JSON.parse(text.slice(colon + 1, j + 1)) as string;
      } catch {
        return [];
      }
      end = j + 1;
    } else {
      const comma = text.indexOf(', ', colon);
      end = comma < 0 ? text.length : comma;
      value = text.slice(colon + 1, end);
    }
    out.push(`${type}:${value}`);
    i = end;
    if (text.startsWith(', ', i)) i += 2;
  }
  return out;
}
