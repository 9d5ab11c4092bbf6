import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Identity, type Security, TlsMaterial } from '@dnc/kit';
import { type IssueOptions, LocalCa } from './pki.js';

/**
 * The certificates of one stack (or one in-process test): a local CA in a private temporary
 * directory, one TLS-secret-shaped directory per process (`<dir>/<process>/tls.crt, tls.key,
 * ca.crt`), and certificates for test callers. Nothing to do by hand; removed with the stack.
 */
export class StackPki {
  private clients = 0;

  private constructor(
    readonly ca: LocalCa,
    readonly dir: string,
  ) {}

  static async create(opts: { trustDomain?: string } = {}): Promise<StackPki> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dnc-pki-'));
    const ca = await LocalCa.create(opts.trustDomain ? { trustDomain: opts.trustDomain } : {});
    return new StackPki(ca, dir);
  }

  get trustDomain(): string {
    return this.ca.trustDomain;
  }

  /** The directory of one process's certificate. */
  dirOf(name: string): string {
    return path.join(this.dir, name.replace(/[^A-Za-z0-9_.#-]/g, '_'));
  }

  /** Issue (or re-issue: a rotation) the certificate of process `name`, running as `identity`. */
  async write(name: string, identity: Identity, opts: IssueOptions = {}): Promise<string> {
    const dir = this.dirOf(name);
    await this.ca.writeIdentity(dir, identity, opts);
    return dir;
  }

  /** Environment of a process whose certificate is `name`'s. */
  env(name: string): Record<string, string> {
    return { DNC_TLS_DIR: this.dirOf(name), DNC_TRUST_DOMAIN: this.trustDomain };
  }

  /** A fresh certificate for a test caller, as the kit's Security of that identity. */
  async security(identity: Identity, opts: IssueOptions = {}): Promise<Security & { mode: 'mtls' }> {
    const dir = await this.write(`client-${identity}-${++this.clients}`, identity, opts);
    return {
      mode: 'mtls',
      identity,
      trustDomain: this.trustDomain,
      material: TlsMaterial.load(dir, this.trustDomain, identity),
    };
  }

  close(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The identity a devstack process runs as: its role, an adapter's country identity. */
export function processIdentity(name: string): Identity {
  const base = name.split('#')[0]!;
  if (base.startsWith('adapter-')) return `registry-adapter-${base.slice('adapter-'.length)}`;
  return base as Identity;
}
