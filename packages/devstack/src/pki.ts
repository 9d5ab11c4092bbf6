import { webcrypto } from 'node:crypto';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_TRUST_DOMAIN, type Identity, spiffeId, TLS_FILES } from '@dnc/kit';
// @peculiar/x509 needs a Reflect metadata polyfill loaded before it (its README); devstack only.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

type X509Crypto = Parameters<typeof x509.cryptoProvider.set>[0];
type KeyPair = Parameters<typeof x509.X509CertificateGenerator.createSelfSigned>[0]['keys'];
type PrivateKey = KeyPair['privateKey'];

x509.cryptoProvider.set(webcrypto as unknown as X509Crypto);

function generateKeys(): Promise<KeyPair> {
  return webcrypto.subtle.generateKey(EC, true, ['sign', 'verify']) as unknown as Promise<KeyPair>;
}

const EC = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING = { name: 'ECDSA', hash: 'SHA-256' } as const;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export interface IssuedCertificate {
  identity: Identity;
  certPem: string;
  keyPem: string;
  caPem: string;
  serialNumber: string;
}

export interface IssueOptions {
  notBefore?: Date;
  notAfter?: Date;
  /** The certificate's common name (an operator's own name); defaults to the identity. */
  commonName?: string;
  /** Names other than the identity's SPIFFE URI (tests: a certificate that names nobody). */
  uris?: string[];
}

async function exportKey(key: PrivateKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key as webcrypto.CryptoKey));
  const body = der.toString('base64').replace(/(.{64})/g, '$1\n');
  return `-----BEGIN PRIVATE KEY-----\n${body}${body.endsWith('\n') ? '' : '\n'}-----END PRIVATE KEY-----\n`;
}

/** PEM with a final newline, so bundles can be concatenated. */
function pemText(cert: x509.X509Certificate): string {
  const pem = cert.toString('pem');
  return pem.endsWith('\n') ? pem : `${pem}\n`;
}

/** Write a file so a reader never sees it half-written (rename is atomic on one filesystem). */
function writeAtomic(file: string, text: string, mode = 0o600): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode });
  renameSync(tmp, file);
}

/**
 * A local certificate authority for one stack (`npm start`, each end-to-end test stack, the
 * benchmark): ECDSA P-256, a CA valid for a few days, and per process a certificate with its
 * SPIFFE-style identity (`spiffe://dnc.internal/gateway`) as the only URI name, usable as server
 * and as client. Nothing of it is ever done by hand; production uses cert-manager instead.
 */
export class LocalCa {
  private constructor(
    readonly trustDomain: string,
    private readonly keys: KeyPair,
    readonly cert: x509.X509Certificate,
  ) {}

  static async create(
    opts: { trustDomain?: string; name?: string; validityMs?: number; notBefore?: Date } = {},
  ): Promise<LocalCa> {
    const keys = await generateKeys();
    const notBefore = opts.notBefore ?? new Date(Date.now() - HOUR);
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      name: `CN=${opts.name ?? 'dnc-scrub local CA'}`,
      keys,
      notBefore,
      notAfter: new Date(notBefore.getTime() + (opts.validityMs ?? 30 * DAY)),
      signingAlgorithm: SIGNING,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    });
    return new LocalCa(opts.trustDomain ?? DEFAULT_TRUST_DOMAIN, keys, cert);
  }

  get pem(): string {
    return pemText(this.cert);
  }

  /** A certificate and key for one identity, signed by this CA. */
  async issue(identity: Identity, opts: IssueOptions = {}): Promise<IssuedCertificate> {
    const keys = await generateKeys();
    const notBefore = opts.notBefore ?? new Date(Date.now() - HOUR);
    const uris = opts.uris ?? [spiffeId(this.trustDomain, identity)];
    const cert = await x509.X509CertificateGenerator.create({
      subject: `CN=${opts.commonName ?? identity}`,
      issuer: this.cert.subject,
      publicKey: keys.publicKey,
      signingKey: this.keys.privateKey,
      notBefore,
      notAfter: opts.notAfter ?? new Date(notBefore.getTime() + 7 * DAY),
      signingAlgorithm: SIGNING,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([
          x509.ExtendedKeyUsage.serverAuth,
          x509.ExtendedKeyUsage.clientAuth,
        ]),
        // The identity is the URI; localhost names let developer tools (grpcurl) connect too.
        new x509.SubjectAlternativeNameExtension([
          ...uris.map((value) => ({ type: 'url' as const, value })),
          { type: 'dns' as const, value: 'localhost' },
          { type: 'ip' as const, value: '127.0.0.1' },
        ]),
        await x509.AuthorityKeyIdentifierExtension.create(this.cert, false),
      ],
    });
    return {
      identity,
      certPem: pemText(cert),
      keyPem: await exportKey(keys.privateKey),
      caPem: this.pem,
      serialNumber: cert.serialNumber,
    };
  }

  /**
   * Issue and write `tls.crt`, `tls.key` and `ca.crt` into `dir` (the layout of a Kubernetes TLS
   * secret); writing again over the same directory is a rotation, which processes pick up.
   */
  async writeIdentity(dir: string, identity: Identity, opts: IssueOptions & { caPem?: string } = {}) {
    const issued = await this.issue(identity, opts);
    writeIssued(dir, { ...issued, caPem: opts.caPem ?? issued.caPem });
    return issued;
  }
}

/** Write an issued certificate in the TLS-secret layout (key first, so cert and key stay a pair). */
export function writeIssued(
  dir: string,
  issued: Pick<IssuedCertificate, 'certPem' | 'keyPem' | 'caPem'>,
): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeAtomic(path.join(dir, TLS_FILES.ca), issued.caPem, 0o644);
  writeAtomic(path.join(dir, TLS_FILES.key), issued.keyPem);
  writeAtomic(path.join(dir, TLS_FILES.cert), issued.certPem, 0o644);
}
