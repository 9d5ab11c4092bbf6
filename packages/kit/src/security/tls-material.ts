import type { KeyObject, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import tls from 'node:tls';
import type { Logger } from 'pino';
import { parseKeyPair, parsePemBundle, signWith, verifyChain } from './certificates.js';
import type { Identity } from './identity.js';

/** The file names of a Kubernetes TLS secret (cert-manager writes these three). */
export const TLS_FILES = { cert: 'tls.crt', key: 'tls.key', ca: 'ca.crt' } as const;

interface Loaded {
  certPem: string;
  keyPem: string;
  caPem: string;
  chain: X509Certificate[];
  key: KeyObject;
  anchors: X509Certificate[];
  identity: Identity;
  context: tls.SecureContext;
}

function read(dir: string): { certPem: string; keyPem: string; caPem: string } {
  return {
    certPem: readFileSync(path.join(dir, TLS_FILES.cert), 'utf8'),
    keyPem: readFileSync(path.join(dir, TLS_FILES.key), 'utf8'),
    caPem: readFileSync(path.join(dir, TLS_FILES.ca), 'utf8'),
  };
}

/**
 * A process's certificate, key and trust anchors (the platform CA bundle), read from a directory
 * laid out like a Kubernetes TLS secret, and re-read while the process runs: a rotated certificate
 * is picked up without a restart. Servers get the new one for new handshakes
 * (`setSecureContext`), client transports for new connections; established connections go on.
 */
export class TlsMaterial {
  private state: Loaded;
  private timer: NodeJS.Timeout | undefined;
  private readonly listeners: (() => void)[] = [];

  private constructor(
    readonly dir: string,
    readonly trustDomain: string,
    state: Loaded,
  ) {
    this.state = state;
  }

  /** Load and check the directory; throws with the reason when the files do not make an identity. */
  static load(dir: string, trustDomain: string, expected?: Identity): TlsMaterial {
    const state = TlsMaterial.parse(read(dir), trustDomain);
    if (expected && state.identity !== expected)
      throw new Error(`the certificate in ${dir} is ${state.identity}, this process runs as ${expected}`);
    return new TlsMaterial(dir, trustDomain, state);
  }

  private static parse(
    files: { certPem: string; keyPem: string; caPem: string },
    trustDomain: string,
  ): Loaded {
    const { chain, key } = parseKeyPair(files);
    const anchors = parsePemBundle(files.caPem);
    if (anchors.length === 0) throw new Error('no CA certificate in ca.crt');
    const identity = verifyChain(chain, anchors, trustDomain);
    if (!identity)
      throw new Error(
        `tls.crt is not a valid certificate of the platform CA with one spiffe://${trustDomain}/<identity> name`,
      );
    const context = tls.createSecureContext({ cert: files.certPem, key: files.keyPem, ca: files.caPem });
    return { ...files, chain, key, anchors, identity, context };
  }

  get identity(): Identity {
    return this.state.identity;
  }

  /** The current context: what a new connection or handshake uses. */
  get secureContext(): tls.SecureContext {
    return this.state.context;
  }

  /** Options for `tls.createServer` / `setSecureContext`. */
  get contextOptions(): { cert: string; key: string; ca: string } {
    return { cert: this.state.certPem, key: this.state.keyPem, ca: this.state.caPem };
  }

  get anchors(): X509Certificate[] {
    return this.state.anchors;
  }

  get certificatePem(): string {
    return this.state.certPem;
  }

  get notAfter(): Date {
    return new Date(this.state.chain[0]!.validTo);
  }

  get serialNumber(): string {
    return this.state.chain[0]!.serialNumber;
  }

  /** Sign with the current key; the certificate that verifies it travels with the signature. */
  sign(data: Buffer): { signature: Buffer; certPem: string } {
    return { signature: signWith(this.state.key, data), certPem: this.state.certPem };
  }

  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /**
   * Re-read the files; apply them when they changed and make a valid identity (the same one: a
   * rotated certificate never changes who this process is). A half-written or bad set is ignored
   * and retried at the next look, so the old certificate keeps serving.
   */
  reload(logger?: Logger): boolean {
    let files: { certPem: string; keyPem: string; caPem: string };
    try {
      files = read(this.dir);
    } catch (error) {
      logger?.warn({ err: error }, 'tls files unreadable; keeping the current certificate');
      return false;
    }
    const s = this.state;
    if (files.certPem === s.certPem && files.keyPem === s.keyPem && files.caPem === s.caPem) return false;
    let next: Loaded;
    try {
      next = TlsMaterial.parse(files, this.trustDomain);
    } catch (error) {
      logger?.warn({ err: error }, 'new tls files rejected; keeping the current certificate');
      return false;
    }
    if (next.identity !== s.identity) {
      logger?.error(
        { current: s.identity, offered: next.identity },
        'new certificate names another identity; keeping the current certificate',
      );
      return false;
    }
    this.state = next;
    logger?.info(
      { identity: next.identity, serial: next.chain[0]!.serialNumber, notAfter: next.chain[0]!.validTo },
      'certificate reloaded',
    );
    for (const l of this.listeners) l();
    return true;
  }

  startReloading(intervalMs: number, logger: Logger): void {
    this.stopReloading();
    this.timer = setInterval(() => this.reload(logger), intervalMs);
    this.timer.unref();
  }

  stopReloading(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
