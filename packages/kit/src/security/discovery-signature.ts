import type { Logger } from 'pino';
import type { AdapterEntry } from '../discovery.js';
import { adapterIdentity } from './identity.js';
import type { Security } from './security.js';
import { canonicalBytes, SignatureVerifier } from './signatures.js';

/** The signature an adapter puts on its announcement: its certificate chain and a signature by its key. */
export interface EntrySignature {
  /** PEM of the adapter's certificate (and intermediates). */
  cert: string;
  /** base64 signature over the canonical bytes of every other field of the entry. */
  sig: string;
}

function unsignedBytes(entry: AdapterEntry): Buffer {
  const { signature: _omit, ...fields } = entry;
  return canonicalBytes(fields as Record<string, unknown>);
}

/** Sign an announcement with the adapter's certificate key (plaintext mode: left unsigned). */
export function signAdapterEntry(security: Security, entry: AdapterEntry): AdapterEntry {
  const { signature: _old, ...fields } = entry;
  if (security.mode !== 'mtls') return fields;
  const { signature, certPem } = security.material.sign(unsignedBytes(fields));
  return { ...fields, signature: { cert: certPem, sig: signature.toString('base64') } };
}

/**
 * What a caller checks before it uses a `dnc_adapters` entry: the entry is signed by a certificate
 * of the platform CA whose identity is `registry-adapter-<the entry's country>`, over every field
 * (address included), and sits under its own key. A forged or altered entry, or one announcing
 * another country's adapter, is dropped before anyone connects to its address. In plaintext mode
 * (development only) there is no key to check against and entries are taken as they are.
 */
export function adapterEntryVerifier(
  security: Security,
  logger?: Logger,
): (key: string, e: AdapterEntry) => boolean {
  if (security.mode !== 'mtls') return () => true;
  const { material, trustDomain } = security;
  const verifier = new SignatureVerifier(() => ({ anchors: material.anchors, trustDomain }));
  const reported = new Set<string>();
  return (key, entry) => {
    const problem = check(verifier, key, entry);
    if (!problem) {
      reported.delete(key);
      return true;
    }
    if (!reported.has(key)) {
      reported.add(key);
      // Once per key until it turns valid: a forger rewriting every second does not flood the log.
      logger?.warn({ key, problem }, 'ignored an adapter entry that fails verification');
    }
    return false;
  };
}

function check(verifier: SignatureVerifier, key: string, entry: AdapterEntry): string | undefined {
  if (!entry.signature || typeof entry.signature.cert !== 'string' || typeof entry.signature.sig !== 'string')
    return 'unsigned';
  if (typeof entry.country !== 'string' || key !== `${entry.country}.${entry.instance_id}`)
    return 'key does not match the entry';
  let expected: string;
  try {
    expected = adapterIdentity(entry.country);
  } catch {
    return 'not a country';
  }
  const signer = verifier.signer(
    entry.signature.cert,
    unsignedBytes(entry),
    Buffer.from(entry.signature.sig, 'base64'),
  );
  if (!signer) return 'bad signature or certificate';
  if (signer !== expected) return `signed by ${signer}, not ${expected}`;
  return undefined;
}
