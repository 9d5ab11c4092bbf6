import { addCodeSamples } from './code-samples.js';
import { IDEMPOTENCY_KEY_PATTERN, JOB_ID_PATTERN, LIMITS } from './limits.js';
import {
  DESCRIPTION,
  EXAMPLE_BASE,
  EXAMPLE_JOB_ID,
  exampleJob,
  exampleRequest,
  exampleResult,
  SAFE_MEANING,
} from './openapi-examples.js';
import {
  ABSENT_HEADERS_EXTENSION,
  baseHeaders,
  ERROR_CODES_EXTENSION,
  errorResponses,
  type HeaderSpec,
  idempotencyReplayedHeader,
  jsonContent,
  type OperationContext,
  RATE_LIMIT_HEADER_NAMES,
  rateLimitHeaders,
  ref,
  retryAfterHeader,
  type SchemaName,
} from './openapi-responses.js';
import { OPERATION_ERRORS } from './routes.js';
import { SCHEMAS } from './schemas.js';
import { DOCS_BASE, registrySnapshotHeader } from './versioning.js';

export { ABSENT_HEADERS_EXTENSION, ERROR_CODES_EXTENSION, RATE_LIMIT_HEADER_NAMES };

export const API_VERSION = '2.1.0';

/** A JSON object as it appears in the document. */
export type JsonObject = { [key: string]: unknown };
export type OpenApiDocument = JsonObject & {
  openapi: string;
  info: JsonObject & { version: string };
  paths: Record<string, JsonObject>;
  components: JsonObject & { schemas: Record<string, JsonObject> };
};

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
      four_inputs: { summary: 'Four inputs, one duplicate, one invalid', value: exampleRequest },
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
          ...errorResponses({ ...v1, keyed: true }, OPERATION_ERRORS.scrub),
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
          ...errorResponses({ ...v2, keyed: true }, OPERATION_ERRORS.createScrubJob),
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
