/** Every documented limit of the public API, in one place (spec: Limits). */
export const LIMITS = {
  v1MaxInputs: 10_000,
  v2MaxInputs: 500_000,
  maxPhoneLength: 64,
  /** 25 MiB: raw HTTP body (v1, v2), canonical durable input and result estimate (v2). */
  maxBodyBytes: 26_214_400,
  minIdempotencyKeyLength: 1,
  maxIdempotencyKeyLength: 255,
  defaultRateLimit: 60,
  minRateLimit: 1,
  maxRateLimit: 60_000,
  rateLimitWindowSeconds: 60,
  v1ExecutionBudgetSeconds: 15,
  v2AdmissionBudgetSeconds: 5,
  v2ActiveJobHardCapSeconds: 86_400,
  v1IdempotencyRetentionSeconds: 604_800,
  v2InputTtlSeconds: 86_400,
  v2ResultTtlSeconds: 604_800,
  v2MetadataTtlSeconds: 2_592_000,
} as const;

/**
 * The length of one phone input as the spec counts "characters" (Limits: "max length of one phone
 * string: 64 characters"): Unicode code points. That is what the OpenAPI document's JSON Schema
 * `maxLength` means (JSON Schema counts characters as defined by RFC 8259, i.e. code points) and what
 * the gateway's validator counts, so the one number holds from the public schema to the adapter: an
 * emoji is one character (two UTF-16 units), a lone surrogate is one, a combining mark is one.
 * JavaScript's `string.length` counts UTF-16 units and must not be used for this limit.
 */
export function phoneLength(phone: string): number {
  let count = 0;
  for (let i = 0; i < phone.length; i++) {
    count++;
    const unit = phone.charCodeAt(i);
    // A high surrogate followed by a low surrogate is one code point.
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < phone.length) {
      const low = phone.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) i++;
    }
  }
  return count;
}

/** At most `LIMITS.maxPhoneLength` characters (code points; see `phoneLength`). */
export function isPhoneWithinLimit(phone: string): boolean {
  // Code points never outnumber UTF-16 units, and each is at most two of them: most inputs are decided
  // by `length` alone.
  if (phone.length <= LIMITS.maxPhoneLength) return true;
  if (phone.length > 2 * LIMITS.maxPhoneLength) return false;
  return phoneLength(phone) <= LIMITS.maxPhoneLength;
}

/** 1 to 255 visible ASCII characters, no spaces. */
export const IDEMPOTENCY_KEY_PATTERN = '^[\\x21-\\x7E]{1,255}$';
export const IDEMPOTENCY_KEY_REGEXP = /^[\x21-\x7E]{1,255}$/;

/**
 * A lowercase UUID: every identifier the platform hands out (job, organization, key, admission,
 * purchase). A job id is opaque to clients and has this form.
 */
export const UUID_PATTERN = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
export const UUID_REGEXP = new RegExp(UUID_PATTERN);
export const JOB_ID_PATTERN = UUID_PATTERN;
export const JOB_ID_REGEXP = UUID_REGEXP;

/** Country codes accepted by the request schema. */
export const COUNTRY_CODES = ['mx', 'ar', 'co', 'es', 'au', 'sg'] as const;
export type CountryCode = (typeof COUNTRY_CODES)[number];
/** The sellable and operational catalog; `es`, `au`, `sg` are technical codes only. */
export const LIVE_COUNTRIES = ['mx', 'ar', 'co'] as const satisfies readonly CountryCode[];
export type LiveCountry = (typeof LIVE_COUNTRIES)[number];
/** The technical codes: accepted by the schema, refused at admission (planned countries). */
export const TECHNICAL_COUNTRIES = COUNTRY_CODES.filter(
  (c): c is Exclude<CountryCode, LiveCountry> => !(LIVE_COUNTRIES as readonly string[]).includes(c),
);

export function isCountryCode(value: string): value is CountryCode {
  return (COUNTRY_CODES as readonly string[]).includes(value);
}

export function isLiveCountry(value: string): value is LiveCountry {
  return (LIVE_COUNTRIES as readonly string[]).includes(value);
}

/** `country must be one of mx, ar, co, es, au, sg`: the message of every country refusal. */
export const COUNTRY_CODES_MESSAGE = `country must be one of ${COUNTRY_CODES.join(', ')}`;

export const JOB_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'expired'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
export type TerminalJobStatus = (typeof TERMINAL_JOB_STATUSES)[number];
export const ACTIVE_JOB_STATUSES = ['queued', 'running'] as const satisfies readonly JobStatus[];
export const TERMINAL_JOB_STATUSES = [
  'succeeded',
  'failed',
  'cancelled',
  'expired',
] as const satisfies readonly JobStatus[];

export function isJobStatus(value: string): value is JobStatus {
  return (JOB_STATUSES as readonly string[]).includes(value);
}

export function isTerminalJobStatus(status: string): status is TerminalJobStatus {
  return (TERMINAL_JOB_STATUSES as readonly string[]).includes(status);
}

/**
 * The documented `reason` vocabulary of an invalid input. `unparseable` is fixed by the spec;
 * the others are this document's decision for what the spec leaves open.
 */
export const INVALID_REASONS = [
  'unparseable',
  'invalid_length',
  'invalid_number',
  'wrong_country',
  'obsolete_format',
  'registry_rejected',
] as const;
export type InvalidReason = (typeof INVALID_REASONS)[number];

export const INVALID_REASON_DESCRIPTIONS: Record<InvalidReason, string> = {
  unparseable:
    'the input cannot be read as one phone number (letters only, empty, no digits, or a second number in the same value after a semicolon, a comma or an extension mark)',
  invalid_length: 'too few or too many digits for the numbering plan of the selected country',
  invalid_number: 'digits of a valid length that the numbering plan of the selected country does not assign',
  wrong_country: 'a number written with the calling code of another country (valid there or not)',
  obsolete_format:
    'a form that is no longer dialable as written; not produced today: the Mexican 044/045 and +52 1 mobile prefixes (retired 2019-2020) are read as the 10-digit number they name and checked as it',
  registry_rejected: 'structurally valid, but the registry rejected it; never classified as safe',
};

/** Closed vocabulary of JobError.error. */
export const JOB_ERROR_CODES = [
  'country_service_maintenance',
  'country_service_temporarily_unavailable',
  'platform_failure',
  'job_expired',
] as const;
export type JobErrorCode = (typeof JOB_ERROR_CODES)[number];

export const RETENTION = { v1: 'zero', v2: 'transient-encrypted' } as const;
export const CACHE_CONTROL = { v1: 'no-store, max-age=0', v2: 'no-store' } as const;

/**
 * Response header of a v1 result (200 of POST /v1/scrub) and a v2 result (200 of GET /v2/scrub/{job_id}/result):
 * when the registry snapshot the answer was read from was taken (ISO 8601 UTC); for a v2 job, the oldest
 * snapshot any of its outcomes came from. Absent only when the registry named none (a remote registry not asked
 * because every input was invalid, or one that did not say which copy it answered from). The result
 * body itself is fixed by the spec, so this evidence of freshness travels as a header.
 */
export const REGISTRY_SNAPSHOT_HEADER = 'X-Registry-Snapshot-At';
