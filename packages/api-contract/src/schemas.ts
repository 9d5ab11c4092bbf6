import { ERROR_CODE_NAMES, type ErrorCode } from './error-codes.js';
import {
  COUNTRY_CODES,
  INVALID_REASONS,
  JOB_ERROR_CODES,
  JOB_ID_PATTERN,
  JOB_STATUSES,
  LIMITS,
} from './limits.js';

/*
 * JSON Schemas as plain objects. Only keywords that mean the same in draft-07 (the gateway's
 * fastify/ajv default) and 2020-12 (OpenAPI 3.1): type, properties, required,
 * additionalProperties, enum, items, maxItems, maxLength, minimum, pattern, format, description.
 * Each schema is self-contained (no $ref), so it can be handed to fastify as is; the OpenAPI
 * builder turns nested component objects into $ref by identity.
 */

const phoneInput = {
  type: 'string',
  maxLength: LIMITS.maxPhoneLength,
  description:
    'One phone number as the customer holds it (any spelling); at most 64 characters (Unicode code points).',
} as const;

const country = {
  type: 'string',
  enum: COUNTRY_CODES,
  description:
    'Registry to check. `mx`, `ar`, `co` are live; `es`, `au`, `sg` are technical codes only (planned), ' +
    'accepted by the schema but refused at admission without an entitlement.',
} as const;

export const ScrubRequest = {
  type: 'object',
  description: 'v1 body: at most 10,000 inputs.',
  additionalProperties: false,
  required: ['country', 'phones'],
  properties: {
    country,
    phones: {
      type: 'array',
      maxItems: LIMITS.v1MaxInputs,
      items: phoneInput,
      description: 'Order and duplicates are preserved. Only a JSON array is accepted (no CSV).',
    },
  },
} as const;

export const DurableScrubRequest = {
  type: 'object',
  description:
    'v2 body: at most 500,000 inputs; the raw body, the canonical durable input and a conservative ' +
    'complete-result estimate must each stay within 25 MiB.',
  additionalProperties: false,
  required: ['country', 'phones'],
  properties: {
    country,
    phones: {
      type: 'array',
      maxItems: LIMITS.v2MaxInputs,
      items: phoneInput,
      description: 'Order and duplicates are preserved. Only a JSON array is accepted (no CSV).',
    },
  },
} as const;

export const InvalidNumber = {
  type: 'object',
  additionalProperties: false,
  required: ['input', 'reason'],
  properties: {
    input: { type: 'string', description: 'The original input string.' },
    reason: { type: 'string', enum: INVALID_REASONS },
  },
} as const;

const count = { type: 'integer', minimum: 0 } as const;

export const Summary = {
  type: 'object',
  description:
    '`total_checked` counts every submitted element (duplicates and invalid values included); ' +
    '`prohibited_numbers + safe_numbers + invalid_numbers = total_checked`.',
  additionalProperties: false,
  required: ['total_checked', 'prohibited_numbers', 'safe_numbers', 'invalid_numbers'],
  properties: {
    total_checked: count,
    prohibited_numbers: count,
    safe_numbers: count,
    invalid_numbers: count,
  },
} as const;

export const ScrubResult = {
  type: 'object',
  description: 'A complete result; there is never a partial result.',
  additionalProperties: false,
  required: ['prohibited_numbers_to_call', 'safe_numbers_to_call', 'invalid_numbers', 'summary'],
  properties: {
    prohibited_numbers_to_call: {
      type: 'array',
      items: { type: 'string' },
      description: 'Structurally valid original inputs found in the selected registry.',
    },
    safe_numbers_to_call: {
      type: 'array',
      items: { type: 'string' },
      description:
        'Structurally valid original inputs NOT found in the selected registry at the time of the check. ' +
        'This is not consent, not reachability and not compliance with other calling rules ' +
        '(for example calling hours).',
    },
    invalid_numbers: {
      type: 'array',
      items: InvalidNumber,
      description:
        'Inputs that failed structural validation or were rejected by the registry, in original relative ' +
        'order; never classified as safe.',
    },
    summary: Summary,
  },
} as const;

export const JobError = {
  type: 'object',
  description: 'Set on a `failed` or `expired` job; a `cancelled` job never carries it.',
  additionalProperties: false,
  required: ['error'],
  properties: {
    error: { type: 'string', enum: JOB_ERROR_CODES },
    country: {
      type: 'string',
      enum: COUNTRY_CODES,
      description: 'Present on country errors (`country_service_*`).',
    },
    retry_after_seconds: {
      type: 'integer',
      minimum: 1,
      description:
        'Country errors may suggest when a new job could succeed: seconds from this response (same meaning as Retry-After); absent once that time has passed.',
    },
    message: { type: 'string' },
  },
} as const;

const jobId = {
  type: 'string',
  pattern: JOB_ID_PATTERN,
  format: 'uuid',
  description: 'Opaque lowercase UUID; implies nothing about country, organization, provider or state.',
} as const;

const timestamp = { type: 'string', format: 'date-time', description: 'ISO 8601 UTC timestamp.' } as const;

/** The job resource's fields after `job_id` and `status`, in the spec's order (Job resource table). */
const jobFieldsAfterStatus = {
  country: { type: 'string', enum: COUNTRY_CODES },
  submitted_count: { type: 'integer', minimum: 0, description: 'Number of submitted inputs.' },
  created_at: timestamp,
  status_url: { type: 'string', format: 'uri', description: '{base_url}/v2/scrub/{job_id}' },
  result_url: { type: 'string', format: 'uri', description: '{base_url}/v2/scrub/{job_id}/result' },
  cancel_url: { type: 'string', format: 'uri', description: '{base_url}/v2/scrub/{job_id}/cancel' },
  expires_at: {
    ...timestamp,
    description:
      'queued or running: admission + 24 h (hard cap); succeeded: terminalization + 7 days; ' +
      'failed, cancelled, expired: terminalization + 30 days.',
  },
} as const;

const jobIdentityRequired = [
  'job_id',
  'status',
  'country',
  'submitted_count',
  'created_at',
  'status_url',
  'result_url',
  'cancel_url',
  'expires_at',
] as const;

export const ScrubJobAccepted = {
  type: 'object',
  description:
    'The job resource at admission (202). `status` is `queued`, or the current active status when an exact ' +
    'retry returns an already accepted active job.',
  additionalProperties: false,
  required: jobIdentityRequired,
  properties: {
    job_id: jobId,
    status: { type: 'string', enum: ['queued', 'running'] },
    ...jobFieldsAfterStatus,
  },
} as const;

export const ScrubJobStatus = {
  type: 'object',
  description:
    'The job resource. `error` is present exactly when `status` is `failed` or `expired`. ' +
    '`cancel_requested` is true while a cancel is accepted but an external registry call is reconciled.',
  additionalProperties: false,
  required: jobIdentityRequired,
  properties: {
    job_id: jobId,
    status: {
      type: 'string',
      enum: JOB_STATUSES,
      description:
        '`queued`, `running` are active; `succeeded`, `failed`, `cancelled`, `expired` are terminal.',
    },
    ...jobFieldsAfterStatus,
    error: JobError,
    cancel_requested: { type: 'boolean' },
  },
} as const;

/** A self-contained error body schema restricted to the given codes (for per-status response schemas). */
export function errorSchema<const C extends readonly string[]>(codes: C) {
  return {
    type: 'object',
    additionalProperties: false,
    required: ['error'],
    properties: {
      error: { type: 'string', enum: codes, description: 'Stable error code.' },
      message: { type: 'string', description: 'Human-readable; what to fix for 4xx, generic for 5xx.' },
    },
  } as const;
}

export const ErrorBody = {
  ...errorSchema(ERROR_CODE_NAMES as readonly ErrorCode[]),
  description: 'Body of every error response: a stable `error` code and, for some errors, a `message`.',
} as const;
/** `Error` is the component name; `ErrorBody` avoids shadowing the global in TypeScript. */
export { ErrorBody as Error };

export const Health = {
  type: 'object',
  additionalProperties: false,
  required: ['ok'],
  properties: { ok: { type: 'boolean', enum: [true] } },
} as const;

export const Ready = {
  type: 'object',
  description: 'The process accepts work and its data store is reachable.',
  additionalProperties: false,
  required: ['ok'],
  properties: { ok: { type: 'boolean', enum: [true] } },
} as const;

export const NotReady = {
  type: 'object',
  description: 'The process is draining or its data store is unavailable.',
  additionalProperties: false,
  required: ['ok', 'error'],
  properties: {
    ok: { type: 'boolean', enum: [false] },
    error: { type: 'string', enum: ['not_ready'] },
  },
} as const;

/** Component name -> schema, in document order. */
export const SCHEMAS = {
  ScrubRequest,
  DurableScrubRequest,
  ScrubResult,
  InvalidNumber,
  Summary,
  ScrubJobAccepted,
  ScrubJobStatus,
  JobError,
  Error: ErrorBody,
  Health,
  Ready,
  NotReady,
} as const;
