import { LIMITS } from '@dnc/api-contract/limits';
import { commonConfig, port, serviceAddress, z } from '@dnc/kit';

const int = (min: number, max: number, fallback: number) =>
  z.coerce.number().int().min(min).max(max).default(fallback);

export const admissionConfig = z.object({
  ...commonConfig,
  DNC_GRPC_PORT: port(50051),
  DNC_QUOTA_ADDR: serviceAddress('http://127.0.0.1:50052'),
  /** The job-scheduler, asked by the claim reconciler whether an unresolved v2 admission's job exists. */
  DNC_JOBS_ADDR: serviceAddress('http://127.0.0.1:50053'),
  /** Quota's admin listener (SetLimit for a purchase); unset: the same address as DNC_QUOTA_ADDR. */
  DNC_QUOTA_ADMIN_ADDR: z
    .string()
    .refine((v) => /^https?:\/\/[^/\s]+$/.test(v), 'must be http://host:port or https://host:port')
    .optional(),
  /** Prefix of every Redis key, so parallel stacks never share counters. */
  DNC_REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_:.-]*$/, 'letters, digits and _ : . - only')
    .default(''),
  /** Monthly quota (checked inputs) a purchase comes with when none is given. */
  DNC_DEFAULT_MONTHLY_QUOTA: int(0, Number.MAX_SAFE_INTEGER, 1_000_000),
  DNC_DEFAULT_RATE_LIMIT: int(LIMITS.minRateLimit, LIMITS.maxRateLimit, LIMITS.defaultRateLimit),
  DNC_RATE_WINDOW_SECONDS: int(1, 3600, 60),
  /** Without Redis each process enforces limit / divisor (at least 1) on its own. */
  DNC_RATE_DEGRADED_DIVISOR: int(1, 1000, 2),
  /**
   * Failed authentications from one address within the window that block the address. Keys carry 256
   * random bits, so the guard sheds load rather than stops guessing: 1,000 a minute leaves room for a
   * customer's misconfigured job (or an integrator's test suite of every 401, a property test's hundred
   * malformed headers) behind a shared address without blocking its valid keys for the block's 5
   * minutes, and still stops a flood (thousands a second) within a second or two.
   */
  DNC_ABUSE_AUTH_FAILURES: int(1, 1_000_000, 1_000),
  DNC_ABUSE_AUTH_WINDOW_SECONDS: int(1, 86_400, 60),
  /** An organization is blocked once its window count passes its limit times this factor. */
  DNC_ABUSE_ORG_FACTOR: z.coerce.number().min(1.01).max(1000).default(5),
  DNC_ABUSE_BLOCK_SECONDS: int(1, 86_400, 300),
  /** v1 budget (15 s) plus margin: an older in-progress claim is reclaimed. */
  DNC_SYNC_CLAIM_TIMEOUT_SECONDS: int(16, 3600, 20),
  /** v2 admission budget (5 s) plus margin: an older unconfirmed claim is resumed. */
  DNC_JOB_CLAIM_TIMEOUT_SECONDS: int(6, 3600, 10),
  /** How often claims left in progress past their timeout are resolved (reconciler.ts). */
  DNC_CLAIM_RECONCILE_INTERVAL_MS: int(100, 600_000, 5_000),
  /**
   * The key of the MAC an idempotency record names its Idempotency-Key by (domain/idempotency.ts): the
   * spec retains only a keyed non-reversible fingerprint. Never rotated in place: a record is found by
   * it for as long as it is kept (up to 31 days), and a retry whose record is not found is admitted and
   * charged again.
   */
  DNC_IDEMPOTENCY_KEY_SECRET: z.string().min(16, 'must be at least 16 characters'),
  /**
   * `keyed`: new records store only the MAC, once no pod of an older release wrote any for 10 minutes
   * (key-form.ts). `transition`: they also keep the plain SHA-256 releases before this one stored and
   * looked up, so during the rollout of that upgrade old and new pods see each other's claims; roll out
   * `transition` first, then `keyed` (store/claims.ts, docs/deploy.md).
   */
  DNC_IDEMPOTENCY_KEY_FORM: z.enum(['keyed', 'transition']).default('keyed'),
  /**
   * How often a process looks for records an older release wrote lately (key-form.ts): at most half its
   * 10-minute window, so a pod of it that writes a claim is seen before the window lets it be forgotten.
   */
  DNC_IDEMPOTENCY_KEY_FORM_CHECK_MS: int(1000, 300_000, 30_000),
  /** v1 idempotency records are kept at least 7 days (spec). */
  DNC_IDEMPOTENCY_RETENTION_SECONDS: int(604_800, 31_536_000, 691_200),
  /**
   * v2 idempotency records are kept as long as their job can exist: the hard cap plus the metadata TTL
   * (the job-scheduler's DNC_JOB_HARD_CAP_SECONDS + DNC_METADATA_TTL_SECONDS, 1 + 30 days), so an exact
   * retry finds the same job for as long as the job is known, instead of a second job and a second charge.
   */
  DNC_JOB_IDEMPOTENCY_RETENTION_SECONDS: int(604_800, 63_072_000, 2_678_400),
  DNC_IDEMPOTENCY_PURGE_INTERVAL_MS: int(1000, 86_400_000, 3_600_000),
  /**
   * How often every country's maintenance window is republished from PostgreSQL to KV dnc_country_status
   * (the v2 workers' only source; country-status.ts): a publish lost to a NATS outage is put right
   * within this. At most 10 minutes, while a missed window lets queued jobs run on a copy declared wrong.
   */
  DNC_COUNTRY_STATUS_REPUBLISH_MS: int(100, 600_000, 30_000),
  /** How often the keys' last use is written (services/admission/src/key-usage.ts). */
  DNC_KEY_USAGE_FLUSH_MS: int(100, 600_000, 10_000),
});

export type AdmissionConfig = z.infer<typeof admissionConfig>;
