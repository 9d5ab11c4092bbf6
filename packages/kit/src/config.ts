import { z } from 'zod';
import { securityConfig } from './security/security.js';

/**
 * Configuration is a schema parsed once at boot. A bad value stops the process with a message that
 * names the variable, never with a stack trace.
 */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration: ${problems.join('; ')}`);
    this.name = 'ConfigError';
  }
}

export function parseConfig<S extends z.ZodObject>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.infer<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const name = issue.path.join('.') || '(environment)';
    // Never echo the value: it may be a secret.
    return `${name}: ${issue.message}`;
  });
  throw new ConfigError(problems);
}

/** Parse or exit(1) with the names of the bad variables on stderr. */
export function loadConfig<S extends z.ZodObject>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.infer<S> {
  try {
    return parseConfig(schema, env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}

export const port = (fallback: number) => z.coerce.number().int().min(0).max(65_535).default(fallback);

export const flag = (fallback: boolean) =>
  z
    .enum(['0', '1', 'true', 'false'])
    .default(fallback ? '1' : '0')
    .transform((v) => v === '1' || v === 'true');

/** Internal service address: `http://host:port` (h2c gRPC). */
export const serviceAddress = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .refine((v) => /^https?:\/\/[^/\s]+$/.test(v), 'must be http://host:port or https://host:port');

/**
 * A fingerprint secret's version: `v` and 1 to 4 digits. The gateway stores it before every idempotency
 * fingerprint (`v1:<hex>`) and admission reads it back: one rule for both (and the chart's schema).
 */
export const FINGERPRINT_VERSION_PATTERN = 'v[0-9]{1,4}';
const FINGERPRINT_VERSION = new RegExp(`^${FINGERPRINT_VERSION_PATTERN}$`);
export const fingerprintVersion = () =>
  z.string().regex(FINGERPRINT_VERSION, '"v" and 1 to 4 digits, e.g. v2 (what admission reads)');

/**
 * Each role's PostgreSQL pool size when DNC_PG_POOL_MAX is unset (the gateway has no pool). The
 * charts' connection budget check reads these too (scripts/charts/pg-budget.mjs).
 */
export const PG_POOL_DEFAULT = {
  admission: 10,
  quota: 10,
  'job-scheduler': 10,
  'job-worker': 6,
  dashboard: 5,
  'registry-adapter': 10,
} as const;

export const commonConfig = {
  DATABASE_URL: z.string().url().default('postgres://postgres@127.0.0.1:5432/dnc'),
  REDIS_URL: z.string().url().default('redis://127.0.0.1:6379'),
  NATS_URL: z.string().default('nats://127.0.0.1:4222'),
  /** This service's own NATS user (the server grants it only the subjects it needs). */
  DNC_NATS_USER: z.string().min(1).optional(),
  DNC_NATS_PASSWORD: z.string().optional(),
  /**
   * The most PostgreSQL connections this process's pool opens; unset: its role's default (10; workers 6,
   * the dashboard 5). Replicas x this, summed over every role, must fit the server's max_connections
   * (docs/deploy.md, "Connection budget").
   */
  DNC_PG_POOL_MAX: z.coerce.number().int().min(1).max(100).optional(),
  /**
   * How long PostgreSQL lets this process's session sit idle inside a transaction before it ends the
   * session and frees its locks (a process frozen or cut off mid-transaction). Unset: 30 s.
   */
  DNC_PG_IDLE_IN_TRANSACTION_MS: z.coerce.number().int().min(500).max(600_000).optional(),
  DNC_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DNC_SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(20_000),
  DNC_METRICS_PORT: port(9464),
  /**
   * Plaintext grpc.health.v1 for probes (kubelet presents no client certificate): it answers health
   * and nothing else. Unset: no such listener (health is still served, over mTLS, on the gRPC port).
   */
  DNC_HEALTH_PORT: z.coerce.number().int().min(0).max(65_535).optional(),
  /**
   * The admin listener (administrative services and the audit log, operator only): apart from the
   * data plane. 0: a free port (local tests); the charts and the local stack give it explicitly.
   */
  DNC_ADMIN_PORT: port(0),
  /** This process's certificate, trust domain and reload interval; or plaintext for development. */
  ...securityConfig,
  /** Prefix for NATS stream, subject and bucket names, so test runs never share state. */
  /** Replicas of the stream and buckets this process creates (3 in production, 1 on one server). */
  DNC_JETSTREAM_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  DNC_NATS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_]*$/, 'letters, digits and _ only')
    .default(''),
};

export { z };
