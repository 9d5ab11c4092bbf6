import { Readable } from 'node:stream';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import {
  DurableScrubRequest,
  JOB_ID_REGEXP,
  LIMITS,
  REGISTRY_SNAPSHOT_HEADER,
  ROUTES,
} from '@dnc/api-contract';
import type { jobsv1 } from '@dnc/proto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { authenticatedCaller, setRateLimitHeaders } from '../auth.js';
import type { GatewayConfig } from '../config.js';
import { deadlineOf } from '../deadline.js';
import { fromRpcError, sendMapped, toHttp } from '../errors.js';
import type { Fingerprints, ScrubBody } from '../flows/admit.js';
import type { OrgScope, Upstream } from '../flows/port.js';
import { submitV2 } from '../flows/v2-submit.js';
import { idempotencyKeyOf } from '../idempotency-key.js';
import { isTerminal, jobResource } from '../job-resource.js';

const READ_TIMEOUT_MS = 5_000;
/** A result read may stream up to 25 MiB; it gets its own, longer deadline. */
const RESULT_TIMEOUT_MS = 60_000;

function routeSchema(operationId: string) {
  const route = ROUTES.find((r) => r.operationId === operationId);
  if (!route) throw new Error(`no contract route ${operationId}`);
  // The job id pattern is checked in the handler: a malformed id is 404 job_not_found, not 400.
  const { params: _params, ...schema } = route.schema;
  return schema;
}

/** 404 for a malformed id: the same answer, byte for byte, as for a missing or foreign job. */
function jobIdOf(request: FastifyRequest<{ Params: { job_id: string } }>): string | undefined {
  const id = request.params.job_id;
  return JOB_ID_REGEXP.test(id) ? id : undefined;
}

const notFound = (reply: FastifyReply) => sendMapped(reply, toHttp('job_not_found'));

/**
 * The body of a job read: the first chunk (or the error) decides the status before any byte is sent, and
 * says the document's length.
 */
async function resultBody(
  upstream: Pick<Upstream, 'jobResult'>,
  org: OrgScope,
  jobId: string,
  signal: AbortSignal,
): Promise<{ body: Readable; snapshotAt: Date | undefined; length: number | undefined }> {
  const stream = upstream
    .jobResult(org, jobId, { signal, timeoutMs: RESULT_TIMEOUT_MS })
    [Symbol.asyncIterator]();
  const first = await stream.next();
  async function* chunks(): AsyncGenerator<Buffer> {
    let next = first;
    while (!next.done) {
      const { chunk } = next.value as jobsv1.GetJobResultResponse;
      yield Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      next = await stream.next();
    }
  }
  const head = first.done ? undefined : (first.value as jobsv1.GetJobResultResponse);
  const snapshotAt = head?.registrySnapshotTime ? timestampDate(head.registrySnapshotTime) : undefined;
  const length = head && head.resultBytes > 0n ? Number(head.resultBytes) : undefined;
  return { body: Readable.from(chunks(), { objectMode: false }), snapshotAt, length };
}

/**
 * v2 durable jobs, HTTP in and out. POST /v2/scrub is `submitV2` (flows/v2-submit.ts); reads and cancel
 * are one scheduler call each, scoped to the caller's organization.
 */
export function v2Routes(config: GatewayConfig, upstream: Upstream, fingerprints: Fingerprints) {
  const baseUrl = config.DNC_PUBLIC_BASE_URL;
  return async (app: FastifyInstance) => {
    app.post<{ Body: ScrubBody }>(
      '/v2/scrub',
      {
        config: { auth: true, keepJsonBytes: true, phonesFromBytes: LIMITS.v2MaxInputs },
        schema: { ...routeSchema('createScrubJob'), body: DurableScrubRequest },
      },
      async (request, reply) => {
        const deadline = deadlineOf(request.receivedAt, config.DNC_V2_ADMISSION_BUDGET_MS);
        const scrub = {
          caller: authenticatedCaller(request),
          idempotencyKey: idempotencyKeyOf(request),
          country: request.body.country,
          phones: request.bodyPhones ?? request.body.phones,
          body: request.jsonBytes,
        };
        const outcome = await submitV2({ upstream, ...fingerprints, log: request.log }, scrub, deadline);
        setRateLimitHeaders(reply, outcome.rateLimit);
        if (!outcome.ok) return sendMapped(reply, outcome.error);
        if (outcome.replayed) {
          // Spec: an exact retry returns the same job: 202 while active, 200 with the status once terminal.
          reply.header('idempotency-replayed', 'true');
          return reply.code(isTerminal(outcome.job) ? 200 : 202).send(jobResource(outcome.job, baseUrl));
        }
        return reply.code(202).send(jobResource(outcome.job, baseUrl));
      },
    );
    await app.register(jobReadRoutes(upstream, baseUrl));
  };
}

/** GET /v2/scrub/{id}, GET .../result and POST .../cancel: one scheduler call each, for the caller's organization. */
function jobReadRoutes(upstream: Pick<Upstream, 'getJob' | 'jobResult' | 'cancelJob'>, baseUrl: string) {
  return async (app: FastifyInstance) => {
    app.get<{ Params: { job_id: string } }>(
      '/v2/scrub/:job_id',
      { config: { auth: true }, schema: routeSchema('getScrubJob') },
      async (request, reply) => {
        const jobId = jobIdOf(request);
        if (!jobId) return notFound(reply);
        try {
          const job = await upstream.getJob(authenticatedCaller(request), jobId, READ_TIMEOUT_MS);
          return reply.code(200).send(jobResource(job, baseUrl));
        } catch (error) {
          return sendMapped(reply, fromRpcError(error));
        }
      },
    );

    app.get<{ Params: { job_id: string } }>(
      '/v2/scrub/:job_id/result',
      { config: { auth: true }, schema: routeSchema('getScrubJobResult') },
      async (request, reply) => {
        const jobId = jobIdOf(request);
        if (!jobId) return notFound(reply);
        const abort = new AbortController();
        let body: Readable;
        try {
          const result = await resultBody(upstream, authenticatedCaller(request), jobId, abort.signal);
          body = result.body;
          if (result.snapshotAt) reply.header(REGISTRY_SNAPSHOT_HEADER, result.snapshotAt.toISOString());
          // A body cut short (the scheduler failed mid-stream) is then an incomplete message to every
          // HTTP client, HTTP/1.0 and close-delimited readers included: never a shorter document.
          if (result.length !== undefined) reply.header('content-length', String(result.length));
        } catch (error) {
          return sendMapped(reply, fromRpcError(error));
        }
        // A client that goes away stops the upstream stream; a broken upstream ends the response early
        // (the client sees an incomplete body, never a partial document presented as complete).
        reply.raw.once('close', () => abort.abort());
        body.once('error', () => request.log.warn('result stream ended early'));
        return reply.code(200).type('application/json; charset=utf-8').send(body);
      },
    );

    app.post<{ Params: { job_id: string } }>(
      '/v2/scrub/:job_id/cancel',
      { config: { auth: true }, schema: routeSchema('cancelScrubJob') },
      async (request, reply) => {
        const jobId = jobIdOf(request);
        if (!jobId) return notFound(reply);
        try {
          const job = await upstream.cancelJob(authenticatedCaller(request), jobId, READ_TIMEOUT_MS);
          // 200 once terminal (now or already); 202 while the in-flight call is reconciled.
          return reply.code(isTerminal(job) ? 200 : 202).send(jobResource(job, baseUrl));
        } catch (error) {
          return sendMapped(reply, fromRpcError(error));
        }
      },
    );
  };
}
