/** Whether a response with this code carries `Retry-After`. */
export type RetryAfterRule = 'required' | 'optional' | 'absent';

export interface ErrorCodeInfo {
  readonly status: number;
  readonly retryAfter: RetryAfterRule;
  /** Whether a client may retry automatically (same idempotency key, honoring Retry-After). */
  readonly retryable: boolean;
  readonly description: string;
  /** What a client does instead, where the generic advice of `retryable` would mislead. */
  readonly advice?: string;
}

/**
 * Every public error code with its HTTP status. The gateway's mapping table, the OpenAPI document,
 * the response validator and the SDK retry policy all read this table.
 */
export const ERROR_CODES = {
  validation_error: {
    status: 400,
    retryAfter: 'absent',
    retryable: false,
    description:
      'Invalid body (not JSON or another media type, wrong shape, unknown field, an input longer than 64 characters), invalid country or missing/invalid Idempotency-Key.',
  },
  invalid_key: {
    status: 401,
    retryAfter: 'absent',
    retryable: false,
    description: 'Authorization header missing or malformed, or the API key is unknown or revoked.',
  },
  subscription_inactive: {
    status: 402,
    retryAfter: 'absent',
    retryable: false,
    description: 'The country subscription is not active (payment pending or lapsed).',
  },
  account_suspended: {
    status: 403,
    retryAfter: 'absent',
    retryable: false,
    description: 'The organization is suspended.',
  },
  activation_incomplete: {
    status: 403,
    retryAfter: 'absent',
    retryable: false,
    description: "The organization's account activation is not complete.",
  },
  country_not_in_plan: {
    status: 403,
    retryAfter: 'absent',
    retryable: false,
    description:
      'The organization has no entitlement for this country (including the technical-only codes es, au, sg).',
  },
  job_not_found: {
    status: 404,
    retryAfter: 'absent',
    retryable: false,
    description:
      'The job does not exist, its id is not a lowercase UUID, or it belongs to another organization (indistinguishable).',
  },
  not_found: {
    status: 404,
    retryAfter: 'absent',
    retryable: false,
    description: 'Unknown route.',
  },
  method_not_allowed: {
    status: 405,
    retryAfter: 'absent',
    retryable: false,
    description: 'Unsupported method on a known route; the Allow header lists the supported methods.',
  },
  idempotency_request_in_progress: {
    status: 409,
    retryAfter: 'required',
    retryable: true,
    description: 'The original request with this Idempotency-Key is still processing.',
  },
  idempotency_key_reused: {
    status: 409,
    retryAfter: 'absent',
    retryable: false,
    description:
      'The Idempotency-Key was already used with a different country or phones array; a new logical request needs a new key. ' +
      'On POST /v2/scrub also an exact retry whose job has passed its 30-day metadata retention (the message says so): the key is spent.',
  },
  job_result_not_ready: {
    status: 409,
    retryAfter: 'optional',
    retryable: false,
    description: 'The job is queued, running, failed or cancelled; only a succeeded job has a result.',
    advice:
      'Poll the job (`GET /v2/scrub/{job_id}`) with bounded backoff, honoring Retry-After, and read the result once it is `succeeded`; a failed or cancelled job never has one.',
  },
  job_expired: {
    status: 410,
    retryAfter: 'absent',
    retryable: false,
    description: 'The job did not terminalize before the 24-hour hard cap.',
  },
  job_result_expired: {
    status: 410,
    retryAfter: 'absent',
    retryable: false,
    description: 'The successful result passed its 7-day retention.',
  },
  payload_too_large: {
    status: 413,
    retryAfter: 'absent',
    retryable: false,
    description:
      'The body, the canonical durable input or the complete-result estimate exceeds 25 MiB, or there are more inputs than the endpoint takes (10,000 for v1, 500,000 for v2).',
  },
  rate_limit_exceeded: {
    status: 429,
    retryAfter: 'required',
    retryable: true,
    description: 'Technical request window exceeded (independent of the customer quota).',
  },
  customer_quota_exceeded: {
    status: 429,
    retryAfter: 'absent',
    retryable: false,
    description: 'The customer quota of the country is exhausted.',
  },
  temporarily_blocked: {
    status: 429,
    retryAfter: 'optional',
    // Spec, Errors: "Retry 409 in-progress, 429 and 503 ... honoring Retry-After"; only the quota's 429 is
    // named among the errors not to retry. The block says how long (Retry-After); a client waits it out.
    retryable: true,
    description: 'The abuse guard blocked the organization for a while.',
  },
  internal_error: {
    status: 500,
    retryAfter: 'absent',
    retryable: false,
    description: 'Unexpected failure. The body is generic.',
    advice:
      'Not retried automatically; a retry (with the same Idempotency-Key on a scrub) is safe: no partial result was returned and no quota consumed. Report it with the X-Request-Id.',
  },
  country_service_maintenance: {
    status: 503,
    retryAfter: 'optional',
    retryable: true,
    description: 'Known maintenance window of the country service.',
  },
  country_service_temporarily_unavailable: {
    status: 503,
    retryAfter: 'optional',
    retryable: true,
    description: 'Temporary or inconclusive country failure, or the country is paid but not yet activated.',
  },
  platform_failure: {
    status: 503,
    retryAfter: 'optional',
    retryable: true,
    description: 'A platform component failed; no partial result, no quota consumed.',
  },
} as const satisfies Record<string, ErrorCodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;

export const ERROR_CODE_NAMES = Object.keys(ERROR_CODES) as ErrorCode[];

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}
