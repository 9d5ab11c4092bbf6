import { addCodeSamples } from './code-samples.js';
import { ERROR_CODES, type ErrorCode } from './error-codes.js';
import {
  CACHE_CONTROL,
  IDEMPOTENCY_KEY_PATTERN,
  INVALID_REASON_DESCRIPTIONS,
  INVALID_REASONS,
  JOB_ID_PATTERN,
  LIMITS,
  RETENTION,
} from './limits.js';
import { OPERATION_ERRORS } from './routes.js';
import { SCHEMAS } from './schemas.js';
import { DOCS_BASE, registrySnapshotHeader, requestIdHeader, VERSIONING } from './versioning.js';

export const API_VERSION = '2.1.0';

/** A JSON object as it appears in the document. */
export type JsonObject = { [key: string]: unknown };
export type OpenApiDocument = JsonObject & {
  openapi: string;
  info: JsonObject & { version: string };
  paths: Record<string, JsonObject>;
  components: JsonObject & { schemas: Record<string, JsonObject> };
};

type SchemaName = keyof typeof SCHEMAS;
type ApiVersion = 'v1' | 'v2';

/** Extension on a response object: headers that must NOT be present (checked by the response validator). */
export const ABSENT_HEADERS_EXTENSION = 'x-absent-headers';
/** Extension on an error response: the error codes it can carry, with their Retry-After rule. */
export const ERROR_CODES_EXTENSION = 'x-error-codes';

const ref = (name: SchemaName) => ({ $ref: `#/components/schemas/${name}` });

/** Replace nested objects that are themselves components by a $ref (identity, not shape). */
function withComponentRefs(schema: unknown, self: unknown, byObject: Map<unknown, SchemaName>): unknown {
  if (Array.isArray(schema)) return schema.map((item) => withComponentRefs(item, self, byObject));
  if (schema === null || typeof schema !== 'object') return schema;
  const name = byObject.get(schema);
  if (name !== undefined && schema !== self) return ref(name);
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(schema)) out[key] = withComponentRefs(value, self, byObject);
  return out;
}

function componentSchemas(): Record<string, JsonObject> {
  const byObject = new Map<unknown, SchemaName>();
  for (const [name, schema] of Object.entries(SCHEMAS)) byObject.set(schema, name as SchemaName);
  const out: Record<string, JsonObject> = {};
  for (const [name, schema] of Object.entries(SCHEMAS)) {
    out[name] = withComponentRefs(schema, schema, byObject) as JsonObject;
  }
  return out;
}

interface HeaderSpec {
  description: string;
  required: boolean;
  schema: JsonObject;
}

const retentionHeader = (version: ApiVersion): HeaderSpec => ({
  description:
    version === 'v1'
      ? 'Zero retention: nothing of the request or result is stored (v1, every response).'
      : 'Input and result are kept encrypted for a limited time (v2, every response).',
  required: true,
  schema: { type: 'string', enum: [RETENTION[version]] },
});

const cacheControlHeader = (version: ApiVersion): HeaderSpec => ({
  description: 'Responses are never cached.',
  required: true,
  schema: { type: 'string', enum: [CACHE_CONTROL[version]] },
});

const retryAfterHeader = (required: boolean, description: string): HeaderSpec => ({
  description,
  required,
  schema: { type: 'integer', minimum: 1 },
});

const RATE_LIMIT_HEADERS = [
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

function rateLimitHeaders(required: boolean): Record<string, HeaderSpec> {
  const out: Record<string, HeaderSpec> = {};
  for (const [suffix, description, schema] of RATE_LIMIT_HEADERS) {
    out[`X-RateLimit-${suffix}`] = { description, required, schema };
    out[`RateLimit-${suffix}`] = { description: `Same value as X-RateLimit-${suffix}.`, required, schema };
  }
  return out;
}

const idempotencyReplayedHeader = (required: boolean, description: string): HeaderSpec => ({
  description,
  required,
  schema: { type: 'string', enum: ['true'] },
});

interface OperationContext {
  version: ApiVersion;
  authenticated: boolean;
}

function baseHeaders(ctx: OperationContext): Record<string, HeaderSpec> {
  return {
    'x-retention': retentionHeader(ctx.version),
    'Cache-Control': cacheControlHeader(ctx.version),
    ...requestIdHeader,
  };
}

function jsonContent(schema: JsonObject, examples?: Record<string, { summary: string; value: unknown }>) {
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

function errorResponse(ctx: OperationContext, status: number, codes: readonly ErrorCode[]): JsonObject {
  const lines = codes.map((code) => {
    const rule = ERROR_CODES[code].retryAfter;
    const retry =
      rule === 'required'
        ? ' `Retry-After` present.'
        : rule === 'optional'
          ? ' `Retry-After` may be present.'
          : '';
    const auto = ERROR_CODES[code].retryable
      ? ' Retry with the same Idempotency-Key, honoring Retry-After, with bounded exponential backoff and jitter.'
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
    examples[code] = { summary: code, value: { error: code, message: ERROR_CODES[code].description } };
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

function errorResponses(
  ctx: OperationContext,
  byStatus: Record<number, readonly ErrorCode[]>,
): Record<string, JsonObject> {
  const out: Record<string, JsonObject> = {};
  for (const [status, codes] of Object.entries(byStatus))
    out[status] = errorResponse(ctx, Number(status), codes);
  return out;
}

const EXAMPLE_JOB_ID = '0b3f5c1e-8f5a-4f7e-9a43-2f1f6f0f9d11';
const EXAMPLE_BASE = 'http://127.0.0.1:8080';

const exampleJob = (status: string, extra: JsonObject = {}) => ({
  job_id: EXAMPLE_JOB_ID,
  status,
  country: 'co',
  submitted_count: 3,
  created_at: '2026-09-01T12:00:00.000Z',
  status_url: `${EXAMPLE_BASE}/v2/scrub/${EXAMPLE_JOB_ID}`,
  result_url: `${EXAMPLE_BASE}/v2/scrub/${EXAMPLE_JOB_ID}/result`,
  cancel_url: `${EXAMPLE_BASE}/v2/scrub/${EXAMPLE_JOB_ID}/cancel`,
  expires_at:
    status === 'queued' || status === 'running'
      ? '2026-09-02T12:00:00.000Z'
      : status === 'succeeded'
        ? '2026-09-08T12:01:00.000Z'
        : '2026-10-01T12:01:00.000Z',
  ...extra,
});

const exampleRequest = { country: 'co', phones: ['+57 601 234 5678', '3001234567', '3001234567', 'call me'] };
const exampleResult = {
  prohibited_numbers_to_call: ['3001234567', '3001234567'],
  safe_numbers_to_call: ['+57 601 234 5678'],
  invalid_numbers: [{ input: 'call me', reason: 'unparseable' }],
  summary: { total_checked: 4, prohibited_numbers: 2, safe_numbers: 1, invalid_numbers: 1 },
};

const SAFE_MEANING =
  '`safe_numbers_to_call` means only that the number was not found in the selected registry at the time of ' +
  'the check. It does not prove consent (for example Spain requires prior consent for commercial calls), ' +
  'reachability, or compliance with other calling rules such as calling hours (for example Colombia, ' +
  'Ley 2300 of 2023).';

const DESCRIPTION = `Checks an array of phone-number strings against the Do Not Call registry of one selected country and
returns the original inputs split into \`prohibited_numbers_to_call\`, \`safe_numbers_to_call\` and \`invalid_numbers\`.

- **v1** \`POST /v1/scrub\`: synchronous, up to ${LIMITS.v1MaxInputs.toLocaleString('en-US')} inputs, one complete result within a
  ${LIMITS.v1ExecutionBudgetSeconds}-second budget or an error (on overrun the whole request fails; it never becomes a background job).
  Nothing is persisted (\`x-retention: zero\`).
- **v2** \`POST /v2/scrub\`: durable job, up to ${LIMITS.v2MaxInputs.toLocaleString('en-US')} inputs, admitted within ${LIMITS.v2AdmissionBudgetSeconds} seconds; poll
  \`GET /v2/scrub/{job_id}\`, read \`GET /v2/scrub/{job_id}/result\` after success, cancel with
  \`POST /v2/scrub/{job_id}/cancel\`. Input and result are kept encrypted for a limited time (\`x-retention: transient-encrypted\`).

A result is always complete; there is never a partial result. Only JSON arrays are accepted (no CSV).
Registry type, provider, chunking, retries, cost and capacity are never exposed.

## What "safe" means

${SAFE_MEANING}

## Countries

Request schema codes: \`mx\`, \`ar\`, \`co\`, \`es\`, \`au\`, \`sg\`. Live catalog: \`mx\`, \`ar\`, \`co\`. \`es\`, \`au\`, \`sg\` are
planned (end of September 2026) technical codes only, not live coverage. Every real request also needs an active
country purchase, country activation, available quota and operational availability, checked at admission. A country
purchase for \`co\` becomes active immediately after the initial payment succeeds, with no manual step.

The service is not for national registry checks of other regions, consent checks or reachability checks.

## Job lifecycle (v2)

States: \`queued\`, \`running\` (active); \`succeeded\`, \`failed\`, \`cancelled\`, \`expired\` (terminal; a terminal job keeps its state).

| From | Trigger | To | Also happens |
|---|---|---|---|
| (admission) | \`POST /v2/scrub\` passes every admission check | queued | quota reserved; 202 |
| queued | execution starts | running | |
| running | every unit of the batch completes | succeeded | result kept 7 days; input due for purge |
| running | maintenance, temporary or inconclusive country failure, platform failure | failed | JobError set; quota released; no partial result |
| running | not terminal within 24 hours of admission | expired | JobError \`job_expired\`; quota released |
| queued | cancel | cancelled | immediate; quota released |
| running | cancel, no external call in progress | cancelled | result discarded; quota released |
| running | cancel while an external registry call is in progress | running, then cancelled once the call is reconciled | cancel accepted at once (202); quota released on reaching cancelled |
| terminal | cancel | unchanged | |

JobError mapping: known maintenance gives \`country_service_maintenance\`; temporary or inconclusive country execution (and a
paid country still pending activation) gives \`country_service_temporarily_unavailable\`; worker, storage or lease failure
gives \`platform_failure\`; the active-job hard cap gives \`job_expired\`; cancellation gives no JobError.

Input handling: the encrypted input becomes due for purge at terminalization; an unconfirmed upload is revalidated at the
24-hour hard cap; a failed cleanup stays retryable until absence is verified.

## Invalid reasons

${INVALID_REASONS.map((reason) => `- \`${reason}\`: ${INVALID_REASON_DESCRIPTIONS[reason]}`).join('\n')}

## Errors and retries

Every error body is \`{"error": "<code>", "message": "<text>"}\` (\`message\` optional). Retry only \`409
idempotency_request_in_progress\`, \`429 rate_limit_exceeded\` and \`503\`, with the same \`Idempotency-Key\`,
honoring \`Retry-After\`, with bounded exponential backoff and jitter. Never retry 400, 401, 402, 403,
\`customer_quota_exceeded\`, \`temporarily_blocked\` or \`idempotency_key_reused\` without correcting the cause.
A country or platform failure returns no partial result and consumes no customer quota. Registry capacity, provider
balance, cost, credentials and raw provider errors are never exposed; such causes map to the country or platform errors.

## Choices this document makes where the service description leaves them open

- Too many inputs (v1 over ${LIMITS.v1MaxInputs}, v2 over ${LIMITS.v2MaxInputs}) or an input over ${LIMITS.maxPhoneLength} characters: \`400 validation_error\`.
  A character is a Unicode code point, as JSON Schema \`maxLength\` counts: an emoji is one character.
  A body that is not JSON: \`400 validation_error\`. Over ${LIMITS.maxBodyBytes} bytes (body, canonical input or result estimate): \`413 payload_too_large\`.
- Codes of the parenthesised errors: \`validation_error\` (400), \`subscription_inactive\` (402), \`account_suspended\`,
  \`activation_incomplete\`, \`country_not_in_plan\` (403), \`method_not_allowed\` (405, with \`Allow\`),
  \`payload_too_large\` (413), \`temporarily_blocked\` (429), \`internal_error\` (500).
- Unknown routes: \`404 {"error": "not_found"}\`. A \`job_id\` that is not a lowercase UUID: \`404 job_not_found\`.
- \`GET /v1/ready\`: \`200 {"ok": true}\` or \`503 {"ok": false, "error": "not_ready"}\`.
- Cancel \`POST /v2/scrub/{job_id}/cancel\`: \`200\` ScrubJobStatus when the job is (now or already) terminal; \`202\`
  ScrubJobStatus (still \`running\`, \`cancel_requested: true\`) when the cancel is accepted while an external registry call
  is reconciled; poll until \`cancelled\`.
- v2 responses carry \`Cache-Control: no-store\`; v1 responses \`Cache-Control: no-store, max-age=0\`.
- JobError carries \`country\` and optionally \`retry_after_seconds\` on country errors.

## Limits

| Item | Value |
|---|---|
| v1 max inputs | ${LIMITS.v1MaxInputs} |
| v2 max inputs | ${LIMITS.v2MaxInputs} |
| max length of one phone string | ${LIMITS.maxPhoneLength} characters |
| max body (v1, v2) | ${LIMITS.maxBodyBytes} bytes (25 MiB) |
| v1 execution budget | ${LIMITS.v1ExecutionBudgetSeconds} s |
| v2 admission budget | ${LIMITS.v2AdmissionBudgetSeconds} s |
| v2 active job hard cap | ${LIMITS.v2ActiveJobHardCapSeconds} s |
| technical rate limit | default ${LIMITS.defaultRateLimit} requests per ${LIMITS.rateLimitWindowSeconds}-second window per organization (override ${LIMITS.minRateLimit} to ${LIMITS.maxRateLimit}) |
| v1 idempotency retention | at least ${LIMITS.v1IdempotencyRetentionSeconds} s |
| v2 input TTL | ${LIMITS.v2InputTtlSeconds} s |
| v2 result TTL | ${LIMITS.v2ResultTtlSeconds} s from successful terminalization |
| v2 metadata TTL | ${LIMITS.v2MetadataTtlSeconds} s from terminalization |
| idempotency key | ${LIMITS.minIdempotencyKeyLength} to ${LIMITS.maxIdempotencyKeyLength} visible ASCII characters, no spaces |

Retention and TTL values are initial policy; a country or legal requirement may shorten them.

The service sends no webhooks and emits no events; job progress is observed only by polling.

${VERSIONING}`;

export function buildOpenApiDocument(): OpenApiDocument {
  const v1Public: OperationContext = { version: 'v1', authenticated: false };
  const v1: OperationContext = { version: 'v1', authenticated: true };
  const v2: OperationContext = { version: 'v2', authenticated: true };

  const okHeaders = (ctx: OperationContext, extra: Record<string, HeaderSpec> = {}) => ({
    ...baseHeaders(ctx),
    ...(ctx.authenticated ? rateLimitHeaders(true) : {}),
    ...extra,
  });

  const idempotencyParam = { $ref: '#/components/parameters/IdempotencyKey' };
  const jobIdParam = { $ref: '#/components/parameters/JobId' };

  const scrubBody = (name: 'ScrubRequest' | 'DurableScrubRequest') => ({
    required: true,
    content: jsonContent(ref(name), {
      three_numbers: { summary: 'Four inputs, one duplicate, one invalid', value: exampleRequest },
    }),
  });

  const paths: OpenApiDocument['paths'] = {
    '/v1/health': {
      get: {
        operationId: 'getHealth',
        summary: 'Liveness',
        tags: ['Health'],
        security: [],
        responses: {
          '200': {
            description: 'The process is alive.',
            headers: okHeaders(v1Public),
            content: jsonContent(ref('Health'), { ok: { summary: 'alive', value: { ok: true } } }),
          },
          ...errorResponses(v1Public, OPERATION_ERRORS.getHealth),
        },
      },
    },
    '/v1/ready': {
      get: {
        operationId: 'getReady',
        summary: 'Readiness',
        description: '200 only while the process accepts work and its data store is reachable.',
        tags: ['Health'],
        security: [],
        responses: {
          '200': {
            description: 'Accepting work.',
            headers: okHeaders(v1Public),
            content: jsonContent(ref('Ready'), { ready: { summary: 'ready', value: { ok: true } } }),
          },
          '503': {
            description: 'Draining, or the data store is unavailable.',
            headers: okHeaders(v1Public),
            content: jsonContent(ref('NotReady'), {
              not_ready: { summary: 'not ready', value: { ok: false, error: 'not_ready' } },
            }),
          },
          ...errorResponses(v1Public, OPERATION_ERRORS.getReady),
        },
      },
    },
    '/v1/scrub': {
      post: {
        operationId: 'scrub',
        summary: 'Scrub up to 10,000 numbers synchronously',
        description:
          `Synchronous check of up to ${LIMITS.v1MaxInputs} inputs within a ${LIMITS.v1ExecutionBudgetSeconds}-second budget. ` +
          'Nothing is persisted; only a keyed non-reversible fingerprint protects exact retries for at least 7 days. ' +
          'An exact retry of a completed request is recalculated and answered with `Idempotency-Replayed: true`, ' +
          `consuming no quota. Work that does not fit v1 goes to \`POST /v2/scrub\` with the same body and idempotency rules.\n\n${SAFE_MEANING}`,
        tags: ['Scrub'],
        parameters: [idempotencyParam],
        requestBody: scrubBody('ScrubRequest'),
        responses: {
          '200': {
            description: 'The complete result.',
            headers: okHeaders(v1, {
              'Idempotency-Replayed': idempotencyReplayedHeader(
                false,
                'Present on an exact retry of a completed request.',
              ),
              ...registrySnapshotHeader('the answer was read from'),
            }),
            content: jsonContent(ref('ScrubResult'), {
              result: { summary: 'complete result', value: exampleResult },
            }),
          },
          ...errorResponses(v1, OPERATION_ERRORS.scrub),
        },
      },
    },
    '/v2/scrub': {
      post: {
        operationId: 'createScrubJob',
        summary: 'Create a durable scrub job (up to 500,000 numbers)',
        description:
          `Admits a durable job of up to ${LIMITS.v2MaxInputs} inputs within ${LIMITS.v2AdmissionBudgetSeconds} seconds ` +
          '(authentication, validation, entitlement, quota reservation, enqueueing; not execution). An exact retry returns ' +
          'the same job identity and reserves no further quota.',
        tags: ['Jobs'],
        parameters: [idempotencyParam],
        requestBody: scrubBody('DurableScrubRequest'),
        responses: {
          '200': {
            description:
              'Exact retry of a job that is already terminal (`succeeded`, `failed`, `cancelled`, `expired`).',
            headers: okHeaders(v2, {
              'Idempotency-Replayed': idempotencyReplayedHeader(true, 'Always `true` on this status.'),
            }),
            content: jsonContent(ref('ScrubJobStatus'), {
              succeeded: { summary: 'replayed terminal job', value: exampleJob('succeeded') },
            }),
          },
          '202': {
            description: 'Job accepted (`queued`), or an exact retry of an already accepted active job.',
            headers: okHeaders(v2, {
              'Idempotency-Replayed': idempotencyReplayedHeader(
                false,
                'Present when an exact retry returns an already accepted active job.',
              ),
            }),
            content: jsonContent(ref('ScrubJobAccepted'), {
              queued: { summary: 'accepted', value: exampleJob('queued') },
            }),
          },
          ...errorResponses(v2, OPERATION_ERRORS.createScrubJob),
        },
      },
    },
    '/v2/scrub/{job_id}': {
      parameters: [jobIdParam],
      get: {
        operationId: 'getScrubJob',
        summary: 'Get the status of a job',
        description:
          'Poll with bounded backoff and honor `Retry-After` when present. Job progress is observed only by polling.',
        tags: ['Jobs'],
        responses: {
          '200': {
            description: 'The job resource.',
            headers: okHeaders(v2, {
              'Retry-After': retryAfterHeader(
                false,
                'Suggested seconds before the next poll while the job is active.',
              ),
            }),
            content: jsonContent(ref('ScrubJobStatus'), {
              running: { summary: 'running', value: exampleJob('running') },
              failed: {
                summary: 'failed with a country error',
                value: exampleJob('failed', {
                  error: {
                    error: 'country_service_temporarily_unavailable',
                    country: 'co',
                    retry_after_seconds: 60,
                  },
                }),
              },
            }),
          },
          ...errorResponses(v2, OPERATION_ERRORS.getScrubJob),
        },
      },
    },
    '/v2/scrub/{job_id}/result': {
      parameters: [jobIdParam],
      get: {
        operationId: 'getScrubJobResult',
        summary: 'Get the result of a succeeded job',
        description: `Only a \`succeeded\` job has a result (same model as v1).\n\n${SAFE_MEANING}`,
        tags: ['Jobs'],
        responses: {
          '200': {
            description: 'The complete result.',
            headers: okHeaders(v2, registrySnapshotHeader('of the oldest answer of the job')),
            content: jsonContent(ref('ScrubResult'), {
              result: { summary: 'complete result', value: exampleResult },
            }),
          },
          ...errorResponses(v2, OPERATION_ERRORS.getScrubJobResult),
        },
      },
    },
    '/v2/scrub/{job_id}/cancel': {
      parameters: [jobIdParam],
      post: {
        operationId: 'cancelScrubJob',
        summary: 'Cancel a job',
        description:
          'Idempotent, no body. A queued job, or a running job with no external call in progress, becomes `cancelled` ' +
          'at once (200). When an external registry call is in progress the cancel is accepted (202, status still ' +
          '`running`, `cancel_requested: true`) and the job becomes `cancelled` once the call is reconciled. A job ' +
          'that is already terminal keeps its state (200). The result is discarded and the quota released.',
        tags: ['Jobs'],
        responses: {
          '200': {
            description: 'The job is (now or already) terminal.',
            headers: okHeaders(v2),
            content: jsonContent(ref('ScrubJobStatus'), {
              cancelled: { summary: 'cancelled', value: exampleJob('cancelled') },
            }),
          },
          '202': {
            description: 'Cancel accepted; an external registry call is being reconciled. Poll the status.',
            headers: okHeaders(v2),
            content: jsonContent(ref('ScrubJobStatus'), {
              reconciling: {
                summary: 'cancel accepted',
                value: exampleJob('running', { cancel_requested: true }),
              },
            }),
          },
          ...errorResponses(v2, OPERATION_ERRORS.cancelScrubJob),
        },
      },
    },
  };

  addCodeSamples(paths);

  return {
    openapi: '3.1.0',
    info: {
      title: 'Phone Do-Not-Call Scrubbing API',
      version: API_VERSION,
      summary: 'Check phone numbers against the Do Not Call registry of one country.',
      description: DESCRIPTION,
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    externalDocs: {
      description: 'Deprecation and sunset guide',
      url: `${DOCS_BASE}/deprecation.md`,
    },
    servers: [
      {
        url: '{base_url}',
        description: 'The base address given with your API key.',
        variables: {
          base_url: { default: EXAMPLE_BASE, description: 'Scheme, host and port of the service.' },
        },
      },
    ],
    security: [{ bearerAuth: [] }],
    tags: [
      { name: 'Health', description: 'Liveness and readiness probes (no authentication).' },
      { name: 'Scrub', description: 'v1: synchronous scrub, zero retention.' },
      { name: 'Jobs', description: 'v2: durable scrub jobs, transient encrypted retention.' },
    ],
    paths,
    components: {
      schemas: componentSchemas(),
      parameters: {
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: true,
          description:
            'Identifies one logical request for the API key: 1 to 255 visible ASCII characters, no spaces. A retry must ' +
            'carry the same country and the same phones in the same order; a new logical request needs a new key. ' +
            'Missing or invalid: 400 `validation_error`.',
          schema: {
            type: 'string',
            minLength: 1,
            maxLength: LIMITS.maxIdempotencyKeyLength,
            pattern: IDEMPOTENCY_KEY_PATTERN,
          },
          example: '6f1c2a9e-3b7d-4c1e-9f0a-5d2b8e7c4a10',
        },
        JobId: {
          name: 'job_id',
          in: 'path',
          required: true,
          description: 'Lowercase UUID of the job. Any other value yields 404 `job_not_found`.',
          schema: { type: 'string', format: 'uuid', pattern: JOB_ID_PATTERN },
          example: EXAMPLE_JOB_ID,
        },
      },
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description:
            '`Authorization: Bearer <API_KEY>`. Keys are created and revoked in the dashboard and shown once; server-side ' +
            'use only. Create and deploy a new key before revoking the old one for rotation without downtime.',
        },
      },
    },
  };
}
