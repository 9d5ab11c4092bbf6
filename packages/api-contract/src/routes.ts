import type { ErrorCode } from './error-codes.js';
import { IDEMPOTENCY_KEY_PATTERN, JOB_ID_PATTERN, LIMITS } from './limits.js';
import {
  DurableScrubRequest,
  errorSchema,
  Health,
  NotReady,
  Ready,
  ScrubJobAccepted,
  ScrubJobStatus,
  ScrubRequest,
  ScrubResult,
} from './schemas.js';

export type OperationId =
  | 'getHealth'
  | 'getReady'
  | 'scrub'
  | 'createScrubJob'
  | 'getScrubJob'
  | 'getScrubJobResult'
  | 'cancelScrubJob';

const SCRUB_ERRORS = {
  400: ['validation_error'],
  401: ['invalid_key'],
  402: ['subscription_inactive'],
  403: ['account_suspended', 'activation_incomplete', 'country_not_in_plan'],
  405: ['method_not_allowed'],
  409: ['idempotency_request_in_progress', 'idempotency_key_reused'],
  413: ['payload_too_large'],
  429: ['rate_limit_exceeded', 'customer_quota_exceeded', 'temporarily_blocked'],
  500: ['internal_error'],
  503: ['country_service_maintenance', 'country_service_temporarily_unavailable', 'platform_failure'],
} as const satisfies Record<number, readonly ErrorCode[]>;

const JOB_READ_ERRORS = {
  401: ['invalid_key'],
  404: ['job_not_found'],
  405: ['method_not_allowed'],
  429: ['rate_limit_exceeded', 'temporarily_blocked'],
  500: ['internal_error'],
  503: ['platform_failure'],
} as const satisfies Record<number, readonly ErrorCode[]>;

/** The error codes each operation may answer, by HTTP status. The OpenAPI document and the gateway share it. */
export const OPERATION_ERRORS = {
  getHealth: { 405: ['method_not_allowed'] },
  getReady: { 405: ['method_not_allowed'] },
  scrub: SCRUB_ERRORS,
  createScrubJob: SCRUB_ERRORS,
  getScrubJob: JOB_READ_ERRORS,
  getScrubJobResult: {
    ...JOB_READ_ERRORS,
    409: ['job_result_not_ready'],
    410: ['job_expired', 'job_result_expired'],
  },
  // Cancel takes no body: one sent anyway over 64 KiB (or over 25 MiB as JSON) is refused.
  cancelScrubJob: { ...JOB_READ_ERRORS, 413: ['payload_too_large'] },
} as const satisfies Record<OperationId, Record<number, readonly ErrorCode[]>>;

const idempotencyKeyHeaders = {
  type: 'object',
  required: ['idempotency-key'],
  properties: {
    'idempotency-key': {
      type: 'string',
      minLength: 1,
      maxLength: LIMITS.maxIdempotencyKeyLength,
      pattern: IDEMPOTENCY_KEY_PATTERN,
    },
  },
} as const;

const jobIdParams = {
  type: 'object',
  required: ['job_id'],
  properties: { job_id: { type: 'string', pattern: JOB_ID_PATTERN } },
} as const;

export interface RouteSchema {
  method: 'GET' | 'POST';
  /** Fastify-style path (`:job_id`). */
  url: string;
  /** OpenAPI path template (`{job_id}`). */
  path: string;
  operationId: OperationId;
  authenticated: boolean;
  version: 'v1' | 'v2';
  schema: {
    body?: object;
    headers?: object;
    /** Informational: a job id that does not match answers 404 job_not_found, not 400. */
    params?: object;
    response: Record<number, object>;
  };
}

function errors(operationId: OperationId): Record<number, object> {
  const out: Record<number, object> = {};
  for (const [status, codes] of Object.entries(OPERATION_ERRORS[operationId]))
    out[Number(status)] = errorSchema(codes);
  return out;
}

/**
 * Every public route with self-contained draft-07 schemas: request body, Idempotency-Key header and one response
 * schema per documented status (successes and errors). Ready for fastify's `schema` option.
 */
export const ROUTES: readonly RouteSchema[] = [
  {
    method: 'GET',
    url: '/v1/health',
    path: '/v1/health',
    operationId: 'getHealth',
    authenticated: false,
    version: 'v1',
    schema: { response: { 200: Health, ...errors('getHealth') } },
  },
  {
    method: 'GET',
    url: '/v1/ready',
    path: '/v1/ready',
    operationId: 'getReady',
    authenticated: false,
    version: 'v1',
    schema: { response: { 200: Ready, 503: NotReady, ...errors('getReady') } },
  },
  {
    method: 'POST',
    url: '/v1/scrub',
    path: '/v1/scrub',
    operationId: 'scrub',
    authenticated: true,
    version: 'v1',
    schema: {
      body: ScrubRequest,
      headers: idempotencyKeyHeaders,
      response: { 200: ScrubResult, ...errors('scrub') },
    },
  },
  {
    method: 'POST',
    url: '/v2/scrub',
    path: '/v2/scrub',
    operationId: 'createScrubJob',
    authenticated: true,
    version: 'v2',
    schema: {
      body: DurableScrubRequest,
      headers: idempotencyKeyHeaders,
      response: { 200: ScrubJobStatus, 202: ScrubJobAccepted, ...errors('createScrubJob') },
    },
  },
  {
    method: 'GET',
    url: '/v2/scrub/:job_id',
    path: '/v2/scrub/{job_id}',
    operationId: 'getScrubJob',
    authenticated: true,
    version: 'v2',
    schema: { params: jobIdParams, response: { 200: ScrubJobStatus, ...errors('getScrubJob') } },
  },
  {
    method: 'GET',
    url: '/v2/scrub/:job_id/result',
    path: '/v2/scrub/{job_id}/result',
    operationId: 'getScrubJobResult',
    authenticated: true,
    version: 'v2',
    schema: { params: jobIdParams, response: { 200: ScrubResult, ...errors('getScrubJobResult') } },
  },
  {
    method: 'POST',
    url: '/v2/scrub/:job_id/cancel',
    path: '/v2/scrub/{job_id}/cancel',
    operationId: 'cancelScrubJob',
    authenticated: true,
    version: 'v2',
    schema: {
      params: jobIdParams,
      response: { 200: ScrubJobStatus, 202: ScrubJobStatus, ...errors('cancelScrubJob') },
    },
  },
];
