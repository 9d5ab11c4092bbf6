import { randomUUID } from 'node:crypto';
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { BinaryReader } from '@bufbuild/protobuf/wire';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { createRouterTransport } from '@connectrpc/connect';
import {
  Code,
  ConnectError,
  PHONE_LIST_HEADER,
  type PhoneSequence,
  publicError,
  type Reason,
  rpcStatusOf,
} from '@dnc/kit';
import { admissionv1, jobsv1, registryv1 } from '@dnc/proto';
import { deadlineOf } from '../../src/deadline.js';
import type { FlowLog } from '../../src/flows/port.js';
import { upstreamClients } from '../../src/upstream/clients.js';
import { upstreamPort } from '../../src/upstream/port.js';

export const ADAPTER = 'http://adapter.test:1';

/** An answer, an error to raise, or either later (to wait past a deadline). */
type Reply<T> = T | Error | Promise<T | Error>;

/**
 * What the in-memory services answer, per call. Defaults: a fresh admission, SAFE for every phone,
 * calls that succeed.
 */
export interface Script {
  admit?: (req: admissionv1.AdmitRequest) => Reply<MessageInitShape<typeof admissionv1.AdmitResponseSchema>>;
  check?: (phones: number) => Reply<registryv1.Outcome[]>;
  complete?: () => Reply<void>;
  abort?: () => Reply<{ completed: boolean } | undefined>;
  submitJob?: (req: jobsv1.SubmitJobRequest) => Reply<jobsv1.Job>;
  /** SubmitJob found the job id stored already (a resumed retry). */
  submitResumed?: boolean;
  confirmJob?: () => Reply<void>;
  getJob?: () => Reply<jobsv1.Job>;
  /** The organization every key authenticates as (else a new one each time). */
  orgId?: string;
  /** The rate-limit figures Authenticate answers with (else none). */
  rateLimit?: admissionv1.RateLimitInfo;
  /** The messages of a result download; `signal` is the call's (aborted when the gateway gives up on it). */
  getJobResult?: (
    signal: AbortSignal,
    timeoutMs: number | undefined,
  ) => AsyncIterable<MessageInitShape<typeof jobsv1.GetJobResultResponseSchema>>;
}

export function job(jobId: string, status = jobsv1.JobStatus.QUEUED): jobsv1.Job {
  return create(jobsv1.JobSchema, {
    jobId,
    status,
    country: 'mx',
    submittedCount: 1,
    createdAt: timestampFromDate(new Date('2026-01-01T00:00:00Z')),
    expiresAt: timestampFromDate(new Date('2026-02-01T00:00:00Z')),
  });
}

async function answer<T>(reply: Reply<T> | undefined, fallback: T): Promise<T> {
  const value = await reply;
  if (value instanceof Error) throw value;
  return value ?? fallback;
}

/** Outcomes to cycle through so that every list of a result gets some phones (two invalid reasons). */
export const OUTCOME_CYCLE = [
  registryv1.Outcome.SAFE,
  registryv1.Outcome.PROHIBITED,
  registryv1.Outcome.INVALID_LENGTH,
  registryv1.Outcome.SAFE,
  registryv1.Outcome.INVALID_NUMBER,
];

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A public refusal as admission raises it. */
export const refusal = (code: Code, reason: Reason) => publicError(code, reason, { message: reason });
export const unavailable = () => new ConnectError('connection refused', Code.Unavailable);

/**
 * The admission, jobs and adapter services in memory, behind Connect's router transport, and the
 * gateway's real Upstream port (batching included) over it. Every call is recorded in order as
 * `<call> <id>` so a test can assert which compensations ran.
 */
export function inMemoryUpstream(script: Script = {}) {
  const calls: string[] = [];
  /** The organization assertion each job call carried (header dnc-org-assertion). */
  const assertions: string[] = [];
  /** One entry per internal call of a batched kind, with its size. */
  const batches: string[] = [];
  /** The phones of each Check, as the adapter read them. */
  const checked: string[][] = [];
  const admissionIds: string[] = [];
  /** The timeout_ms each completion of a CompleteMany carried. */
  const completeTimeouts: number[] = [];
  /** The deadline_unix_ms (epoch ms) each completion of a CompleteMany carried. */
  const completeDeadlines: number[] = [];
  const transport = createRouterTransport((router) => {
    router.service(admissionv1.AdmissionService, {
      async authenticate() {
        calls.push('authenticate');
        return { orgId: script.orgId ?? randomUUID(), keyId: randomUUID(), rateLimit: script.rateLimit };
      },
      async admitMany(req) {
        batches.push(`admitMany ${req.requests.length}`);
        const results = await Promise.all(
          req.requests.map(async (one) => {
            calls.push(`admit ${one.idempotencyKey}`);
            try {
              const admissionId = randomUUID();
              admissionIds.push(admissionId);
              const admitted = await answer(script.admit?.(one), {});
              return {
                result: {
                  case: 'admitted' as const,
                  value: create(admissionv1.AdmitResponseSchema, {
                    admissionId,
                    adapterAddress: one.kind === admissionv1.RequestKind.SYNC ? ADAPTER : '',
                    jobId: one.kind === admissionv1.RequestKind.JOB ? randomUUID() : '',
                    ...admitted,
                  }),
                },
              };
            } catch (error) {
              return { result: { case: 'error' as const, value: rpcStatusOf(error) } };
            }
          }),
        );
        return { results };
      },
      async completeMany(req) {
        batches.push(`completeMany ${req.requests.length}`);
        const results = await Promise.all(
          req.requests.map(async (one) => {
            calls.push(`complete ${one.admissionId}`);
            completeTimeouts.push(one.timeoutMs);
            completeDeadlines.push(Number(one.deadlineUnixMs));
            try {
              await answer(script.complete?.(), undefined);
              return { result: { case: 'completed' as const, value: {} } };
            } catch (error) {
              return { result: { case: 'error' as const, value: rpcStatusOf(error) } };
            }
          }),
        );
        return { results };
      },
      async abort(req) {
        calls.push(`abort ${req.admissionId}`);
        return (await answer(script.abort?.(), undefined)) ?? { completed: false };
      },
      async confirmJob(req) {
        calls.push(`confirm ${req.admissionId} ${req.jobId}`);
        await answer(script.confirmJob?.(), undefined);
        return {};
      },
    });
    router.service(jobsv1.JobsService, {
      async submitJob(req, ctx) {
        calls.push(`submit ${req.jobId} ${req.reservationId}`);
        assertions.push(ctx.requestHeader.get('dnc-org-assertion') ?? '');
        return {
          job: await answer(script.submitJob?.(req), job(req.jobId)),
          resumed: script.submitResumed ?? false,
        };
      },
      async getJob(req, ctx) {
        calls.push(`get ${req.jobId}`);
        assertions.push(ctx.requestHeader.get('dnc-org-assertion') ?? '');
        return { job: await answer(script.getJob?.(), job(req.jobId, jobsv1.JobStatus.SUCCEEDED)) };
      },
      async *getJobResult(req, ctx) {
        calls.push(`result ${req.jobId}`);
        if (!script.getJobResult) throw new ConnectError('no result scripted', Code.Unimplemented);
        yield* script.getJobResult(ctx.signal, ctx.timeoutMs());
      },
    });
    router.service(registryv1.RegistryAdapterService, {
      async check(req, ctx) {
        // The gateway sends the phones as phone_list (kit checkAt) to an adapter that says it reads
        // it, as this one does: read them from that field.
        ctx.responseHeader.set(PHONE_LIST_HEADER, '1');
        const phones = req.phoneList.length > 0 ? phoneListPhones(req.phoneList) : req.phones;
        const count = phones.length;
        checked.push(phones);
        calls.push(`check ${count}`);
        batches.push(`check ${count}`);
        const safe = Array.from({ length: count }, () => registryv1.Outcome.SAFE);
        return { outcomes: await answer(script.check?.(count), safe) };
      },
    });
  });
  const upstream = upstreamPort(
    upstreamClients({ admission: transport, jobs: transport, adapter: () => transport }),
  );
  const warnings: string[] = [];
  const errors: string[] = [];
  const log: FlowLog = { warn: (m) => warnings.push(m), error: (m) => errors.push(m) };
  return {
    upstream,
    calls,
    batches,
    checked,
    admissionIds,
    completeTimeouts,
    completeDeadlines,
    log,
    warnings,
    errors,
    assertions,
  };
}

/** The phones a phone_list holds (each a length varint and its UTF-8 bytes). */
function phoneListPhones(list: Uint8Array): string[] {
  const reader = new BinaryReader(list);
  const phones: string[] = [];
  while (reader.pos < list.length) phones.push(reader.string());
  return phones;
}

export const fingerprint = (country: string, phones: PhoneSequence) =>
  `v1:${country}${phones.length}`.padEnd(67, '0');

export const budget = (ms = 15_000) => deadlineOf(Date.now(), ms);
