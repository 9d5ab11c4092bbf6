import { createPrivateKey, type KeyObject, sign, verify, X509Certificate } from 'node:crypto';
import { type Identity, identityOfCertificate } from './identity.js';

/** The certificates of a PEM bundle, in order (a leaf first, then its intermediates). */
export function parsePemBundle(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((b) => new X509Certificate(b));
}

function validAt(cert: X509Certificate, now: number): boolean {
  return Date.parse(cert.validFrom) <= now && now <= Date.parse(cert.validTo);
}

function issuedBy(cert: X509Certificate, issuer: X509Certificate): boolean {
  return issuer.ca && cert.checkIssued(issuer) && cert.verify(issuer.publicKey);
}

/**
 * Verify a chain (leaf first, then intermediates) against trust anchors, at a time, the way a TLS
 * handshake would: each certificate issued and signed by the next, the last by an anchor, every one
 * of them valid now. Returns the leaf's identity, or undefined when the chain does not hold.
 */
export function verifyChain(
  chain: X509Certificate[],
  anchors: X509Certificate[],
  trustDomain: string,
  now = Date.now(),
): Identity | undefined {
  const leaf = chain[0];
  if (!leaf || leaf.ca) return undefined;
  let current = leaf;
  for (let depth = 0; depth <= chain.length; depth++) {
    if (!validAt(current, now)) return undefined;
    const anchor = anchors.find((a) => issuedBy(current, a) && validAt(a, now));
    if (anchor) return identityOfCertificate(leaf, trustDomain);
    const next = chain.slice(1).find((c) => c !== current && issuedBy(current, c));
    if (!next) return undefined;
    current = next;
  }
  return undefined;
}

/** ECDSA and RSA keys sign a SHA-256 digest; Ed25519 and Ed448 sign the message itself. */
function digestFor(key: KeyObject): string | null {
  return key.asymmetricKeyType === 'ed25519' || key.asymmetricKeyType === 'ed448' ? null : 'sha256';
}

export function signWith(key: KeyObject, data: Buffer): Buffer {
  return sign(digestFor(key), data, key);
}

export function verifySignature(cert: X509Certificate, data: Buffer, signature: Buffer): boolean {
  try {
    return verify(digestFor(cert.publicKey), data, cert.publicKey, signature);
  } catch {
    return false;
  }
}

export interface KeyPairPem {
  certPem: string;
  keyPem: string;
}

/** Parse and cross-check a certificate and its key: throws with a reason when they do not belong together. */
export function parseKeyPair(pair: KeyPairPem): { chain: X509Certificate[]; key: KeyObject } {
  const chain = parsePemBundle(pair.certPem);
  if (chain.length === 0) throw new Error('no certificate in tls.crt');
  const key = createPrivateKey(pair.keyPem);
  if (!chain[0]!.checkPrivateKey(key)) throw new Error('tls.key does not belong to tls.crt');
  return { chain, key };
}
