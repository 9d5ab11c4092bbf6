import { commonConfig, port, serviceAddress, z } from '@dnc/kit';
import { resultPurgeDelaySeconds } from './domain/states.js';

/**
 * A retention or cap in seconds, at most the spec's value (its default): "a country or legal requirement
 * may shorten them", never lengthen them.
 */
const atMost = (spec: number) => z.coerce.number().int().min(1).max(spec).default(spec);

export const jobsConfig = z
  .object({
    ...commonConfig,
    /** api: JobsService, admin and sweepers; worker: JetStream consumers; all: both in one process. */
    DNC_ROLE: z.enum(['api', 'worker', 'all']).default('all'),
    DNC_GRPC_PORT: port(50053),
    DNC_QUOTA_ADDR: serviceAddress('http://127.0.0.1:50052'),
    /** `id:base64key,id2:base64key`: 256-bit key-encryption keys by id. Old ids stay for decryption. */
    DNC_KEKS: z.string().min(1),
    DNC_KEK_ACTIVE_ID: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, _ . - only'),
    DNC_JOB_HARD_CAP_SECONDS: atMost(86_400),
    DNC_RESULT_TTL_SECONDS: atMost(604_800),
    DNC_METADATA_TTL_SECONDS: atMost(2_592_000),
    /**
     * Admission's idempotency retention (same setting, same bounds): a job id fenced by its claim
     * reconciler (FenceJob) is kept this long, then purged by the sweeper.
     */
    DNC_IDEMPOTENCY_RETENTION_SECONDS: z.coerce.number().int().min(604_800).max(31_536_000).default(691_200),
    /** How often the sweepers (dispatch reconciliation, hard cap, retention, cleanup retries) run. */
    DNC_SWEEP_INTERVAL_MS: z.coerce.number().int().min(50).max(600_000).default(5_000),
    /**
     * One replica sweeps at a time, on a lease renewed before each step: a replica stopped, cut off or
     * killed mid-tick loses its turn this long after its last renewal (the sweeps wait that long). A step
     * longer than the lease (a large backlog of settlements or purges) lets another replica sweep beside it,
     * which every step allows (rows locked or conditioned, settlements idempotent); the lease keeps it rare.
     */
    DNC_SWEEP_LEASE_MS: z.coerce.number().int().min(1_000).max(600_000).default(30_000),
    /** A queued job whose dispatch is not confirmed within this time is published again. */
    DNC_REDISPATCH_AFTER_MS: z.coerce.number().int().min(100).max(3_600_000).default(30_000),
    /** Countries whose work queues this worker consumes. */
    DNC_COUNTRIES: z
      .string()
      .default('mx,ar,co')
      .transform((v) => v.split(',').map((c) => c.trim()))
      .refine((cs) => cs.every((c) => /^[a-z]{2}$/.test(c)), 'comma-separated two-letter country codes'),
    /** Jobs one worker process runs at the same time, per country. */
    DNC_WORKER_JOB_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
    /**
     * Adapter calls in flight for one job. Three, so the adapter has the next unit queued while the worker
     * records the last one and encodes another (with two, both calls ended together and the adapter idled
     * between pairs): a 500,000-number job 12% faster end to end (issue 18, `ab.mjs --v2`).
     */
    DNC_WORKER_UNIT_CONCURRENCY: z.coerce.number().int().min(1).max(16).default(3),
    DNC_WORKER_UNIT_SIZE: z.coerce.number().int().min(1).max(100_000).default(50_000),
    /** Deadline of one adapter call, and how many times a temporary failure is retried. */
    DNC_ADAPTER_CALL_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(60_000),
    DNC_ADAPTER_RETRIES: z.coerce.number().int().min(0).max(10).default(3),
    /** A lease not renewed within this time is taken over by another worker. */
    DNC_JOB_LEASE_MS: z.coerce.number().int().min(1_000).max(600_000).default(15_000),
    /** JetStream redelivers a message not acked (or heartbeated) within this time. */
    DNC_JOBS_ACK_WAIT_MS: z.coerce.number().int().min(1_000).max(600_000).default(30_000),
    DNC_JOBS_MAX_DELIVER: z.coerce.number().int().min(1).max(100).default(10),
    /**
     * V8 heap the jobs of one worker process may hold at once (worker/memory.ts estimates each job from
     * its input). Unset: the heap limit (--max-old-space-size) less 128 MiB.
     */
    DNC_WORKER_MEMORY_BUDGET_MIB: z.coerce.number().int().min(16).max(65_536).optional(),
    /**
     * How job inputs and results are written (crypto/segment-codec.ts): 2 compresses each segment before
     * sealing it; 1 writes them as releases before compression did, which those releases can read. Both
     * are always read. Set 1 on every scheduler and worker while a rolling upgrade from such a release
     * runs, then 2 once none of its pods is left.
     */
    DNC_JOB_BLOB_FORMAT: z.coerce.number().int().min(1).max(2).default(2),
    /**
     * A job claimed this many times without finishing fails with platform_failure (the executions a
     * shutting-down worker handed back are not counted).
     */
    DNC_JOB_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(5),
    /** Result downloads this process streams at once; more are refused with a retryable 503 (result-streams.ts). */
    DNC_RESULT_STREAMS_MAX: z.coerce.number().int().min(1).max(10_000).default(32),
    /** Of those, at most this many for one organization. */
    DNC_RESULT_STREAMS_PER_ORG: z.coerce.number().int().min(1).max(10_000).default(4),
    /**
     * The longest one result download streams (the gateway's setting of the same name: set both alike); a
     * result is purged twice this long after its retention ends, so no download in progress loses its last
     * segments. 15 minutes: 25 MiB to a reader of about 0.23 Mbit/s (a minute needed 3.5 Mbit/s, and a slower
     * reader could never download a large result). A reader that stops reading is closed by the gateway.
     */
    DNC_RESULT_STREAM_MAX_MS: z.coerce.number().int().min(100).max(3_600_000).default(900_000),
  })
  .superRefine((c, ctx) => {
    // Found by a review (2026-12-05): the metadata's purge deletes the job and its result with it, so one
    // due before the result's own purge answered 404 inside the result's retention, or cut a download
    // begun before its end.
    const resultKept =
      c.DNC_RESULT_TTL_SECONDS + resultPurgeDelaySeconds({ resultStreamMaxMs: c.DNC_RESULT_STREAM_MAX_MS });
    if (c.DNC_METADATA_TTL_SECONDS < resultKept)
      ctx.addIssue({
        code: 'custom',
        path: ['DNC_METADATA_TTL_SECONDS'],
        message: `at least DNC_RESULT_TTL_SECONDS + 2 x DNC_RESULT_STREAM_MAX_MS (${resultKept} s): the job's metadata outlives its result and the result's purge`,
      });
  });

export type JobsConfig = z.infer<typeof jobsConfig>;
