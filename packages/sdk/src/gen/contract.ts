// biome-ignore-all lint: generated from the constants of @dnc/api-contract
// Do not edit: run `npm run types:generate -w @dnc-scrub/sdk`.

/** Version of the OpenAPI document this SDK was built from. */
export const API_VERSION = '2.1.0' as const;

/** Every public error code with its HTTP status and whether a client may retry it automatically. */
export const ERROR_CODES = {
  validation_error: {
    status: 400,
    retryable: false,
  },
  invalid_key: {
    status: 401,
    retryable: false,
  },
  subscription_inactive: {
    status: 402,
    retryable: false,
  },
  account_suspended: {
    status: 403,
    retryable: false,
  },
  activation_incomplete: {
    status: 403,
    retryable: false,
  },
  country_not_in_plan: {
    status: 403,
    retryable: false,
  },
  job_not_found: {
    status: 404,
    retryable: false,
  },
  not_found: {
    status: 404,
    retryable: false,
  },
  method_not_allowed: {
    status: 405,
    retryable: false,
  },
  idempotency_request_in_progress: {
    status: 409,
    retryable: true,
  },
  idempotency_key_reused: {
    status: 409,
    retryable: false,
  },
  job_result_not_ready: {
    status: 409,
    retryable: false,
  },
  job_expired: {
    status: 410,
    retryable: false,
  },
  job_result_expired: {
    status: 410,
    retryable: false,
  },
  payload_too_large: {
    status: 413,
    retryable: false,
  },
  rate_limit_exceeded: {
    status: 429,
    retryable: true,
  },
  customer_quota_exceeded: {
    status: 429,
    retryable: false,
  },
  temporarily_blocked: {
    status: 429,
    retryable: true,
  },
  internal_error: {
    status: 500,
    retryable: false,
  },
  country_service_maintenance: {
    status: 503,
    retryable: true,
  },
  country_service_temporarily_unavailable: {
    status: 503,
    retryable: true,
  },
  platform_failure: {
    status: 503,
    retryable: true,
  },
} as const;

/** Country codes accepted by the request schema. */
export const COUNTRY_CODES = ['mx', 'ar', 'co', 'es', 'au', 'sg'] as const;

/** The sellable and operational catalog; the other codes are technical only. */
export const LIVE_COUNTRIES = ['mx', 'ar', 'co'] as const;

/** Every documented limit of the public API. */
export const LIMITS = {
  v1MaxInputs: 10000,
  v2MaxInputs: 500000,
  maxPhoneLength: 64,
  maxBodyBytes: 26214400,
  minIdempotencyKeyLength: 1,
  maxIdempotencyKeyLength: 255,
  defaultRateLimit: 60,
  minRateLimit: 1,
  maxRateLimit: 60000,
  rateLimitWindowSeconds: 60,
  v1ExecutionBudgetSeconds: 15,
  v2AdmissionBudgetSeconds: 5,
  v2ActiveJobHardCapSeconds: 86400,
  v1IdempotencyRetentionSeconds: 604800,
  v2InputTtlSeconds: 86400,
  v2ResultTtlSeconds: 604800,
  v2MetadataTtlSeconds: 2592000,
} as const;

/** An Idempotency-Key: 1 to 255 visible ASCII characters, no spaces. */
export const IDEMPOTENCY_KEY_PATTERN = '^[\\x21-\\x7E]{1,255}$' as const;

/** The `reason` vocabulary of an invalid input. */
export const INVALID_REASONS = [
  'unparseable',
  'invalid_length',
  'invalid_number',
  'wrong_country',
  'obsolete_format',
  'registry_rejected',
] as const;

/** Closed vocabulary of `JobError.error`. */
export const JOB_ERROR_CODES = [
  'country_service_maintenance',
  'country_service_temporarily_unavailable',
  'platform_failure',
  'job_expired',
] as const;

/** Job states that never change again. */
export const TERMINAL_JOB_STATUSES = ['succeeded', 'failed', 'cancelled', 'expired'] as const;
