import type { Logger } from 'pino';
import { z } from 'zod';
import { DEFAULT_TRUST_DOMAIN, type Identity, isTrustDomain } from './identity.js';
import { TlsMaterial } from './tls-material.js';

/**
 * How a process talks to its peers. `mtls` is the only mode for anything but a developer's
 * machine: every connection mutually authenticated by certificates of the platform CA. `plaintext`
 * is h2c with the caller's identity in a header anyone can write: it exists for debugging only,
 * must be asked for by name (DNC_INSECURE_PLAINTEXT=1), and says so loudly.
 */
export type Security =
  | { mode: 'mtls'; identity: Identity; trustDomain: string; material: TlsMaterial }
  | { mode: 'plaintext'; identity: Identity; trustDomain: string };

export const securityConfig = {
  /** Directory with tls.crt, tls.key and ca.crt (a Kubernetes TLS secret, as cert-manager writes it). */
  DNC_TLS_DIR: z.string().min(1).optional(),
  DNC_TRUST_DOMAIN: z
    .string()
    .default(DEFAULT_TRUST_DOMAIN)
    .refine(isTrustDomain, 'lowercase letters, digits, dots, dashes and underscores'),
  /** How often the certificate files are looked at for a rotation. */
  DNC_TLS_RELOAD_MS: z.coerce.number().int().min(100).max(3_600_000).default(5_000),
  /** Development only: no TLS, no authentication of callers. Logged loudly at start. */
  DNC_INSECURE_PLAINTEXT: z
    .enum(['0', '1', 'true', 'false'])
    .default('0')
    .transform((v) => v === '1' || v === 'true'),
};

export type SecurityConfig = {
  DNC_TLS_DIR?: string | undefined;
  DNC_TRUST_DOMAIN: string;
  DNC_TLS_RELOAD_MS: number;
  DNC_INSECURE_PLAINTEXT: boolean;
};

export const INSECURE_WARNING =
  'DNC_INSECURE_PLAINTEXT=1: TLS IS OFF. Internal calls are neither encrypted nor authenticated; ' +
  'any process that reaches a port can act as any identity. Development only, never in production.';

/**
 * The security of one process, from its configuration: its certificate (which must name the
 * identity the process runs as), reloaded from disk every DNC_TLS_RELOAD_MS; or, asked for
 * explicitly, plaintext. Neither given is a configuration error, never a silent fallback.
 */
export function createSecurity(config: SecurityConfig, identity: Identity, logger?: Logger): Security {
  if (config.DNC_INSECURE_PLAINTEXT) {
    logger?.warn({ tls: 'off', identity }, INSECURE_WARNING);
    if (!logger) process.stderr.write(`WARNING: ${INSECURE_WARNING}\n`);
    return { mode: 'plaintext', identity, trustDomain: config.DNC_TRUST_DOMAIN };
  }
  if (!config.DNC_TLS_DIR)
    throw new Error(
      'DNC_TLS_DIR is required (tls.crt, tls.key and ca.crt of this workload); ' +
        'DNC_INSECURE_PLAINTEXT=1 turns TLS off for development only',
    );
  const material = TlsMaterial.load(config.DNC_TLS_DIR, config.DNC_TRUST_DOMAIN, identity);
  if (logger) material.startReloading(config.DNC_TLS_RELOAD_MS, logger);
  logger?.info(
    { identity, serial: material.serialNumber, notAfter: material.notAfter.toISOString() },
    'mTLS identity loaded',
  );
  return { mode: 'mtls', identity, trustDomain: config.DNC_TRUST_DOMAIN, material };
}

/** Stop looking at the certificate files (the process is shutting down). */
export function closeSecurity(security: Security): void {
  if (security.mode === 'mtls') security.material.stopReloading();
}
