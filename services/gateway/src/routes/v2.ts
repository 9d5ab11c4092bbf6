import { Readable } from 'node:stream';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import {
  DurableScrubRequest,
  JOB_ID_REGEXP,
  LIMITS,
  REGISTRY_SNAPSHOT_HEADER,
  ROUTES,
} from '@dnc/api-contract';
import { ResultStreams } from '@dnc/kit';
import type { jobsv1 } from '@dnc/proto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { authenticatedCaller, setRateLimitHeaders } from '../auth.js';
import type { GatewayConfig } from '../config.js';
import { admissionBudgetStart, deadlineOf, type StopClock } from '../deadline.js';
import { fromRpcError, sendMapped, toHttp } from '../errors.js';
import type { Fingerprints, ScrubBody } from '../flows/admit.js';
import type { OrgScope, Upstream } from '../flows/port.js';
import { submitV2 } from '../flows/v2-submit.js';
import { idempotencyKeyOf } from '../idempotency-key.js';
import { isTerminal, jobResource } from '../job-resource.js';

const READ_TIMEOUT_MS = 5_000;
/** Past the scheduler's own end of a download (DNC_RESULT_STREAM_MAX_MS), so that its error comes first. */
const RESULT_DEADLINE_SLACK_MS = 5_000;

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
  timeoutMs: number,
): Promise<{ body: Readable; snapshotAt: Date | undefined; length: number | undefined }> {
  const stream = upstream.jobResult(org, jobId, { signal, timeoutMs })[Symbol.asyncIterator]();
  const first = await stream.next();
  const head = first.done ? undefined : (first.value as jobsv1.GetJobResultResponse);
  const snapshotAt = head?.registrySnapshotTime ? timestampDate(head.registrySnapshotTime) : undefined;
  const length = head && head.resultBytes > 0n ? Number(head.resultBytes) : undefined;
  // The length said (Content-Length) is the stored one, outside the segments' authentication: the body
  // must be exactly that long. One chunk is held back until the next message or the end shows the total,
  // so a client never has the whole declared length of a document that goes on or ends short.
  async function* chunks(): AsyncGenerator<Buffer> {
    let next = first;
    let total = 0;
    let held: Buffer | undefined;
    while (!next.done) {
      const { chunk } = next.value as jobsv1.GetJobResultResponse;
      total += chunk.byteLength;
      if (length !== undefined && total > length) throw new Error('result longer than its stored length');
      if (held) yield held;
      held = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      next = await stream.next();
    }
    if (length !== undefined && total !== length) throw new Error('result shorter than its stored length');
    if (held) yield held;
  }
  return { body: Readable.from(chunks(), { objectMode: false }), snapshotAt, length };
}

/**
 * v2 durable jobs, HTTP in and out. POST /v2/scrub is `submitV2` (flows/v2-submit.ts); reads and cancel
 * are one scheduler call each, scoped to the caller's organization.
 */
export function v2Routes(
  config: GatewayConfig,
  upstream: Upstream,
  fingerprints: Fingerprints,
  stopping: StopClock,
) {
  const baseUrl = config.DNC_PUBLIC_BASE_URL;
  return async (app: FastifyInstance) => {
    app.post<{ Body: ScrubBody }>(
      '/v2/scrub',
      {
        config: { auth: true, keepJsonBytes: true, phonesFromBytes: LIMITS.v2MaxInputs },
        schema: { ...routeSchema('createScrubJob'), body: DurableScrubRequest },
      },
      async (request, reply) => {
        const deadline = deadlineOf(
          admissionBudgetStart(request),
          config.DNC_V2_ADMISSION_BUDGET_MS,
          stopping.notAfter,
        );
        const scrub = {
          caller: authenticatedCaller(request),
          idempotencyKey: idempotencyKeyOf(request),
          country: request.body.country,
          phones: request.bodyPhones ?? request.body.phones,
          body: request.jsonBytes,
          uploadMs: request.uploadMs,
          stopping: Number.isFinite(stopping.notAfter),
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
    const downloads = new ResultStreams(config.DNC_RESULT_STREAMS_MAX, config.DNC_RESULT_STREAMS_PER_ORG);
    await app.register(
      jobReadRoutes(upstream, baseUrl, config.DNC_RESULT_STREAM_MAX_MS + RESULT_DEADLINE_SLACK_MS, downloads),
    );
  };
}

/** GET /v2/scrub/{id}, GET .../result and POST .../cancel: one scheduler call each, for the caller's organization. */
function jobReadRoutes(
  upstream: Pick<Upstream, 'getJob' | 'jobResult' | 'cancelJob'>,
  baseUrl: string,
  resultTimeoutMs: number,
  downloads: ResultStreams,
) {
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
        const caller = authenticatedCaller(request);
        // A slot of this gateway until the response is over: what the scheduler streams ahead waits here
        // for the reader (kit ResultStreams).
        const release = downloads.acquire(caller.orgId);
        if (!release) return sendMapped(reply, toHttp('platform_failure', undefined, 1));
        // A client that goes away stops the upstream stream, and frees its download slot at the scheduler:
        // listened to before the first chunk is awaited (a client gone meanwhile, found by a review,
        // 2026-12-04, held its slot until the call's deadline).
        const abort = new AbortController();
        const stop = () => {
          release();
          abort.abort();
        };
        reply.raw.once('close', stop);
        // Gone already: its close will not come again.
        if (request.raw.socket.destroyed) stop();
        let body: Readable;
        try {
          const result = await resultBody(upstream, caller, jobId, abort.signal, resultTimeoutMs);
          body = result.body;
          if (result.snapshotAt) reply.header(REGISTRY_SNAPSHOT_HEADER, result.snapshotAt.toISOString());
          // A body cut short (the scheduler failed mid-stream, or the stored length is wrong) is then an
          // incomplete message to every HTTP client, HTTP/1.0 and close-delimited readers included: never a
          // shorter document.
          if (result.length !== undefined) reply.header('content-length', String(result.length));
        } catch (error) {
          return sendMapped(reply, fromRpcError(error));
        }
        // A broken upstream ends the response early (the client sees an incomplete body, never a partial
        // document presented as complete).
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
