import { Readable } from 'node:stream';
import { DurableScrubRequest, JOB_ID_REGEXP, LIMITS, ROUTES } from '@dnc/api-contract';
import { admissionv1, jobsv1 } from '@dnc/proto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { admitScrub, type ScrubBody } from '../admit.js';
import type { Upstreams } from '../clients.js';
import type { GatewayConfig } from '../config.js';
import { requestDeadline } from '../deadline.js';
import { fromRpcError, sendMapped, toHttp } from '../errors.js';
import { idempotencyKeyOf } from '../idempotency-key.js';

const ABORT_TIMEOUT_MS = 2_000;
const READ_TIMEOUT_MS = 5_000;
/** A result read may stream up to 25 MiB; it gets its own, longer deadline. */
const RESULT_TIMEOUT_MS = 60_000;

const STATUS: Record<jobsv1.JobStatus, string> = {
  [jobsv1.JobStatus.UNSPECIFIED]: 'queued',
  [jobsv1.JobStatus.QUEUED]: 'queued',
  [jobsv1.JobStatus.RUNNING]: 'running',
  [jobsv1.JobStatus.SUCCEEDED]: 'succeeded',
  [jobsv1.JobStatus.FAILED]: 'failed',
  [jobsv1.JobStatus.CANCELLED]: 'cancelled',
  [jobsv1.JobStatus.EXPIRED]: 'expired',
};

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'expired']);

function iso(ts: { seconds: bigint; nanos: number } | undefined): string {
  if (!ts) return new Date(0).toISOString();
  return new Date(Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1e6)).toISOString();
}

/**
 * The public job resource: exactly the spec's fields, absolute URLs from DNC_PUBLIC_BASE_URL, `error`
 * only on failed or expired jobs (country and retry hint only where they apply), `cancel_requested`
 * only while an accepted cancel waits for an in-flight registry call. Nothing internal.
 */
export function jobResource(job: jobsv1.Job, baseUrl: string): Record<string, unknown> {
  const base = `${baseUrl.replace(/\/+$/, '')}/v2/scrub/${job.jobId}`;
  const status = STATUS[job.status];
  const resource: Record<string, unknown> = {
    job_id: job.jobId,
    status,
    country: job.country,
    submitted_count: job.submittedCount,
    created_at: iso(job.createdAt),
    status_url: base,
    result_url: `${base}/result`,
    cancel_url: `${base}/cancel`,
    expires_at: iso(job.expiresAt),
  };
  if ((status === 'failed' || status === 'expired') && job.error) {
    const error: Record<string, unknown> = { error: job.error.error };
    if (job.error.error.startsWith('country_service_') && job.error.country)
      error['country'] = job.error.country;
    if (job.error.retryAfterSeconds >= 1) error['retry_after_seconds'] = job.error.retryAfterSeconds;
    resource['error'] = error;
  }
  if (status === 'running' && job.cancelRequested) resource['cancel_requested'] = true;
  return resource;
}

/**
 * The durable input exactly as the scheduler stores it (the phones as one UTF-8 JSON array, in order)
 * and a conservative estimate of the complete result: every input in its longest possible place, an
 * `invalid_numbers` entry with the longest reason, plus the fixed keys and the summary.
 */
export function durableInput(phones: readonly string[]): { canonical: Buffer; resultEstimate: number } {
  const canonical = Buffer.from(JSON.stringify(phones), 'utf8');
  // The quoted inputs alone: the canonical array without its brackets and separating commas.
  const quoted = canonical.length - 2 - Math.max(0, phones.length - 1);
  // `{"input":` + value + `,"reason":"registry_rejected"}` and a comma.
  const perInvalid = '{"input":,"reason":"registry_rejected"}'.length + 1;
  const fixed =
    '{"prohibited_numbers_to_call":[],"safe_numbers_to_call":[],"invalid_numbers":[],"summary":{}}'.length +
    '"total_checked":,"prohibited_numbers":,"safe_numbers":,"invalid_numbers":'.length +
    4 * String(phones.length).length;
  return { canonical, resultEstimate: fixed + quoted + perInvalid * phones.length };
}

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
 * v2 durable jobs. POST /v2/scrub: validate -> the three 25 MiB limits -> admission.Admit (kind JOB)
 * -> replay ? the stored job (202 active, 200 terminal) : jobs.SubmitJob -> admission.ConfirmJob ->
 * 202, inside the 5-second admission budget. Reads and cancel go to the scheduler, scoped to the
 * caller's organization.
 */
export function v2Routes(config: GatewayConfig, upstreams: Upstreams) {
  const baseUrl = config.DNC_PUBLIC_BASE_URL;
  return async (app: FastifyInstance) => {
    app.post<{ Body: ScrubBody }>(
      '/v2/scrub',
      {
        config: { auth: true },
        schema: { ...routeSchema('createScrubJob'), body: DurableScrubRequest },
      },
      async (request, reply) => {
        const deadline = requestDeadline(request, config.DNC_V2_ADMISSION_BUDGET_MS);
        const idempotencyKey = idempotencyKeyOf(request);
        const { country, phones } = request.body;
        const auth = request.auth!;

        const sizes = durableInput(phones);
        if (sizes.canonical.length > LIMITS.maxBodyBytes)
          return sendMapped(
            reply,
            toHttp('payload_too_large', 'The durable input exceeds 26,214,400 bytes.'),
          );
        if (sizes.resultEstimate > LIMITS.maxBodyBytes)
          return sendMapped(
            reply,
            toHttp(
              'payload_too_large',
              'The complete result of this job could exceed 26,214,400 bytes; submit fewer or shorter inputs.',
            ),
          );

        let admitted: admissionv1.AdmitResponse;
        try {
          admitted = await admitScrub(
            config,
            upstreams,
            request,
            reply,
            idempotencyKey,
            request.body,
            admissionv1.RequestKind.JOB,
            deadline.remaining(),
          );
        } catch (error) {
          return sendMapped(reply, fromRpcError(error));
        }
        if (!JOB_ID_REGEXP.test(admitted.jobId)) {
          request.log.error('admission returned no job identity');
          return sendMapped(reply, toHttp('platform_failure', undefined, 1));
        }

        if (admitted.replay) {
          // Spec: an exact retry returns the same job: 202 while active, 200 with the status once terminal.
          try {
            const { job } = await upstreams.jobs.getJob(
              { orgId: auth.orgId, jobId: admitted.jobId },
              { timeoutMs: deadline.remaining() },
            );
            const resource = jobResource(job!, baseUrl);
            reply.header('idempotency-replayed', 'true');
            return reply.code(TERMINAL.has(resource['status'] as string) ? 200 : 202).send(resource);
          } catch (error) {
            return sendMapped(reply, fromRpcError(error));
          }
        }

        let job: jobsv1.Job;
        try {
          const submitted = await upstreams.jobs.submitJob(
            {
              jobId: admitted.jobId,
              orgId: auth.orgId,
              reservationId: admitted.admissionId,
              country,
              // One bytes field instead of up to 500,000 strings: far cheaper to encode and decode.
              canonicalPhones: sizes.canonical,
            },
            { timeoutMs: deadline.remaining() },
          );
          job = submitted.job!;
        } catch (error) {
          // Not stored (or not known to be): undo the admission so the key can be retried. SubmitJob is
          // idempotent by job id, so a job stored after all is returned again on that retry.
          try {
            await upstreams.admission.abort(
              { admissionId: admitted.admissionId },
              { timeoutMs: ABORT_TIMEOUT_MS },
            );
          } catch {
            request.log.warn('abort of a failed v2 admission did not complete');
          }
          return sendMapped(reply, fromRpcError(error));
        }
        try {
          await upstreams.admission.confirmJob(
            { admissionId: admitted.admissionId, jobId: job.jobId },
            { timeoutMs: Math.max(250, deadline.remaining()) },
          );
        } catch {
          // The job is durable and runs; admission's own recovery confirms the claim later.
          request.log.warn('confirm of a stored v2 job did not complete');
        }
        return reply.code(202).send(jobResource(job, baseUrl));
      },
    );

    app.get<{ Params: { job_id: string } }>(
      '/v2/scrub/:job_id',
      { config: { auth: true }, schema: routeSchema('getScrubJob') },
      async (request, reply) => {
        const jobId = jobIdOf(request);
        if (!jobId) return notFound(reply);
        try {
          const { job } = await upstreams.jobs.getJob(
            { orgId: request.auth!.orgId, jobId },
            { timeoutMs: READ_TIMEOUT_MS },
          );
          return reply.code(200).send(jobResource(job!, baseUrl));
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
        const stream = upstreams.jobs
          .getJobResult(
            { orgId: request.auth!.orgId, jobId },
            { signal: abort.signal, timeoutMs: RESULT_TIMEOUT_MS },
          )
          [Symbol.asyncIterator]();
        // The first chunk (or the error) decides the status before any byte is sent.
        let first: IteratorResult<jobsv1.GetJobResultResponse>;
        try {
          first = await stream.next();
        } catch (error) {
          return sendMapped(reply, fromRpcError(error));
        }
        async function* chunks(): AsyncGenerator<Buffer> {
          let next = first;
          while (!next.done) {
            yield Buffer.from(
              next.value.chunk.buffer,
              next.value.chunk.byteOffset,
              next.value.chunk.byteLength,
            );
            next = await stream.next();
          }
        }
        const body = Readable.from(chunks(), { objectMode: false });
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
          const { job } = await upstreams.jobs.cancelJob(
            { orgId: request.auth!.orgId, jobId },
            { timeoutMs: READ_TIMEOUT_MS },
          );
          const resource = jobResource(job!, baseUrl);
          // 200 once terminal (now or already); 202 while the in-flight call is reconciled.
          return reply.code(TERMINAL.has(resource['status'] as string) ? 200 : 202).send(resource);
        } catch (error) {
          return sendMapped(reply, fromRpcError(error));
        }
      },
    );
  };
}
