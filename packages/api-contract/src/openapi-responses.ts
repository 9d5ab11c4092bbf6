// The response parts of the OpenAPI document: the headers each version promises and the error
// responses of every operation, from the contract's error table.
import { ERROR_CODES, type ErrorCode, type ErrorCodeInfo } from './error-codes.js';
import { CACHE_CONTROL, RETENTION } from './limits.js';
import type { JsonObject } from './openapi.js';
import type { SCHEMAS } from './schemas.js';
import { requestIdHeader } from './versioning.js';

export type ApiVersion = 'v1' | 'v2';
export type SchemaName = keyof typeof SCHEMAS;

/** Extension on a response object: headers that must NOT be present (checked by the response validator). */
export const ABSENT_HEADERS_EXTENSION = 'x-absent-headers';
/** Extension on an error response: the error codes it can carry, with their Retry-After rule. */
export const ERROR_CODES_EXTENSION = 'x-error-codes';

export const ref = (name: SchemaName) => ({ $ref: `#/components/schemas/${name}` });

export interface HeaderSpec {
  description: string;
  required: boolean;
  schema: JsonObject;
}

export const retentionHeader = (version: ApiVersion): HeaderSpec => ({
  description:
    version === 'v1'
      ? 'Zero retention: nothing of the request or result is stored (v1, every response).'
      : 'Input and result are kept encrypted for a limited time (v2, every response).',
  required: true,
  schema: { type: 'string', enum: [RETENTION[version]] },
});

export const cacheControlHeader = (version: ApiVersion): HeaderSpec => ({
  description: 'Responses are never cached.',
  required: true,
  schema: { type: 'string', enum: [CACHE_CONTROL[version]] },
});

export const retryAfterHeader = (required: boolean, description: string): HeaderSpec => ({
  description,
  required,
  schema: { type: 'integer', minimum: 1 },
});

export const RATE_LIMIT_HEADERS = [
  [
    'Limit',
    'Requests allowed in the current window (1 to 60000).',
    { type: 'integer', minimum: 1, maximum: 60000 },
  ],
  [
    'Remaining',
    'Requests left in the current window (0 to 60000).',
    { type: 'integer', minimum: 0, maximum: 60000 },
  ],
  ['Reset', 'Unix timestamp (seconds) at which the window resets.', { type: 'integer', minimum: 0 }],
] as const;

export const RATE_LIMIT_HEADER_NAMES = RATE_LIMIT_HEADERS.flatMap(([suffix]) => [
  `X-RateLimit-${suffix}`,
  `RateLimit-${suffix}`,
]);

export function rateLimitHeaders(required: boolean): Record<string, HeaderSpec> {
  const out: Record<string, HeaderSpec> = {};
  for (const [suffix, description, schema] of RATE_LIMIT_HEADERS) {
    out[`X-RateLimit-${suffix}`] = { description, required, schema };
    out[`RateLimit-${suffix}`] = { description: `Same value as X-RateLimit-${suffix}.`, required, schema };
  }
  return out;
}

export const idempotencyReplayedHeader = (required: boolean, description: string): HeaderSpec => ({
  description,
  required,
  schema: { type: 'string', enum: ['true'] },
});

export interface OperationContext {
  version: ApiVersion;
  authenticated: boolean;
  /** The operation takes an Idempotency-Key (POST /v1/scrub, POST /v2/scrub). */
  keyed?: boolean;
}

export function baseHeaders(ctx: OperationContext): Record<string, HeaderSpec> {
  return {
    'x-retention': retentionHeader(ctx.version),
    'Cache-Control': cacheControlHeader(ctx.version),
    ...requestIdHeader,
  };
}

export function jsonContent(
  schema: JsonObject,
  examples?: Record<string, { summary: string; value: unknown }>,
) {
  return { 'application/json': examples ? { schema, examples } : { schema } };
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Invalid request',
  401: 'Missing, malformed, unknown or revoked API key',
  402: 'Country subscription inactive',
  403: 'Organization suspended or no country entitlement',
  404: 'Not found',
  405: 'Method not allowed',
  409: 'Conflict',
  410: 'Gone',
  413: 'Payload too large',
  429: 'Too many requests',
  500: 'Internal error',
  503: 'Service unavailable',
};

export function errorResponse(
  ctx: OperationContext,
  status: number,
  codes: readonly ErrorCode[],
): JsonObject {
  const lines = codes.map((code) => {
    const rule = ERROR_CODES[code].retryAfter;
    const retry =
      rule === 'required'
        ? ' `Retry-After` present.'
        : rule === 'optional'
          ? ' `Retry-After` may be present.'
          : '';
    const info: ErrorCodeInfo = ERROR_CODES[code];
    const auto = info.advice
      ? ` ${info.advice}`
      : info.retryable
        ? ` Retry${ctx.keyed ? ' with the same Idempotency-Key' : ''}, honoring Retry-After, with bounded exponential backoff and jitter.`
        : ' Do not retry without correcting the cause.';
    return `- \`${code}\`: ${ERROR_CODES[code].description}${retry}${auto}`;
  });
  const headers: Record<string, HeaderSpec> = { ...baseHeaders(ctx) };
  if (ctx.authenticated && status !== 401 && status !== 405) Object.assign(headers, rateLimitHeaders(false));
  if (status === 405) {
    headers['Allow'] = {
      description: 'Comma-separated list of the supported methods.',
      required: true,
      schema: { type: 'string' },
    };
  }
  if (codes.some((code) => ERROR_CODES[code].retryAfter !== 'absent')) {
    headers['Retry-After'] = retryAfterHeader(
      false,
      'Seconds to wait before retrying (integer, at least 1); see the codes.',
    );
  }
  const examples: Record<string, { summary: string; value: unknown }> = {};
  for (const code of codes) {
    // Spec, Authentication 3: a 401's body is exactly `{error: "invalid_key"}`.
    const value =
      code === 'invalid_key' ? { error: code } : { error: code, message: ERROR_CODES[code].description };
    examples[code] = { summary: code, value };
  }
  const response: JsonObject = {
    description: `${STATUS_TEXT[status] ?? 'Error'}.\n\n${lines.join('\n')}`,
    headers,
    content: jsonContent(
      { allOf: [ref('Error'), { type: 'object', properties: { error: { enum: [...codes] } } }] },
      examples,
    ),
    [ERROR_CODES_EXTENSION]: [...codes],
  };
  if (status === 401) {
    response[ABSENT_HEADERS_EXTENSION] = RATE_LIMIT_HEADER_NAMES;
    response['description'] +=
      '\n\nA 401 carries `x-retention` but no rate-limit headers, and must not be retried automatically.';
  }
  return response;
}

export function errorResponses(
  ctx: OperationContext,
  byStatus: Record<number, readonly ErrorCode[]>,
): Record<string, JsonObject> {
  const out: Record<string, JsonObject> = {};
  for (const [status, codes] of Object.entries(byStatus))
    out[status] = errorResponse(ctx, Number(status), codes);
  return out;
}
