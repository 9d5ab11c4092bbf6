import type { X509Certificate } from 'node:crypto';
import { parsePemBundle, verifyChain, verifySignature } from './certificates.js';
import type { Identity } from './identity.js';

/** How long a verified certificate chain is trusted before it is checked again (expiry, CA change). */
const CHAIN_CACHE_MS = 30_000;
const CHAIN_CACHE_MAX = 256;

export interface TrustAnchors {
  readonly anchors: X509Certificate[];
  readonly trustDomain: string;
}

/**
 * Checks data signed by a workload with its certificate key (adapter announcements in discovery,
 * admission's organization tokens): the certificate that travels with the signature must chain to
 * the platform CA and name the identity the reader expects; then the signature must verify. A
 * chain is verified once and cached briefly, so the steady cost is one signature check.
 */
export class SignatureVerifier {
  private readonly chains = new Map<string, { leaf: X509Certificate; identity: Identity; at: number }>();

  constructor(private readonly trust: () => TrustAnchors) {}

  /** The signer's identity when `signature` over `data` is valid; undefined otherwise. */
  signer(certPem: string, data: Buffer, signature: Buffer, now = Date.now()): Identity | undefined {
    const chain = this.chain(certPem, now);
    if (!chain) return undefined;
    return verifySignature(chain.leaf, data, signature) ? chain.identity : undefined;
  }

  private chain(certPem: string, now: number) {
    const cached = this.chains.get(certPem);
    if (cached && now - cached.at < CHAIN_CACHE_MS) return cached;
    let parsed: X509Certificate[];
    try {
      parsed = parsePemBundle(certPem);
    } catch {
      return undefined;
    }
    const { anchors, trustDomain } = this.trust();
    const identity = verifyChain(parsed, anchors, trustDomain, now);
    if (!identity) {
      this.chains.delete(certPem);
      return undefined;
    }
    if (this.chains.size >= CHAIN_CACHE_MAX) this.chains.clear();
    const entry = { leaf: parsed[0]!, identity, at: now };
    this.chains.set(certPem, entry);
    return entry;
  }
}

/** One canonical byte string for a flat record: its fields in key order, as JSON. */
export function canonicalBytes(record: Record<string, unknown>): Buffer {
  const keys = Object.keys(record).sort();
  return Buffer.from(JSON.stringify(record, keys), 'utf8');
}
