import { commonConfig, fingerprintVersion, flag, port, serviceAddress, z } from '@dnc/kit';

export const gatewayConfig = z
  .object({
    DNC_LOG_LEVEL: commonConfig.DNC_LOG_LEVEL,
    DNC_SHUTDOWN_TIMEOUT_MS: commonConfig.DNC_SHUTDOWN_TIMEOUT_MS,
    DNC_METRICS_PORT: commonConfig.DNC_METRICS_PORT,
    DNC_TLS_DIR: commonConfig.DNC_TLS_DIR,
    DNC_TRUST_DOMAIN: commonConfig.DNC_TRUST_DOMAIN,
    DNC_TLS_RELOAD_MS: commonConfig.DNC_TLS_RELOAD_MS,
    DNC_INSECURE_PLAINTEXT: commonConfig.DNC_INSECURE_PLAINTEXT,
    DNC_GATEWAY_PORT: port(8080),
    DNC_GATEWAY_HOST: z.string().default('0.0.0.0'),
    /** Absolute base of status_url, result_url and cancel_url. */
    DNC_PUBLIC_BASE_URL: z
      .string()
      .url()
      .default('http://127.0.0.1:8080')
      .transform((v) => v.replace(/\/+$/, '')),
    DNC_ADMISSION_ADDR: serviceAddress('http://127.0.0.1:50051'),
    DNC_JOBS_ADDR: serviceAddress('http://127.0.0.1:50053'),
    /** Keyed fingerprint of idempotent requests; the version is stored with each fingerprint. */
    DNC_FINGERPRINT_SECRET: z.string().min(16, 'must be at least 16 characters'),
    DNC_FINGERPRINT_VERSION: fingerprintVersion().default('v1'),
    /**
     * During a rotation of the secret: the previous secret and its version (both, or neither; a version
     * other than the new one). Admit then carries the request's fingerprint of both versions, so a record
     * stored under the previous one is compared with the same request's fingerprint of its version. Keep
     * them as long as admission keeps records: 31 days (v2 claims, DNC_JOB_IDEMPOTENCY_RETENTION_SECONDS),
     * not v1's 8; dropped sooner, an exact v2 retry is refused 409 idempotency_key_reused.
     */
    DNC_FINGERPRINT_PREVIOUS_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
    DNC_FINGERPRINT_PREVIOUS_VERSION: fingerprintVersion().optional(),
    /** v1 execution budget (spec: 15 seconds). */
    DNC_V1_BUDGET_MS: z.coerce.number().int().min(100).max(15_000).default(15_000),
    /** v2 admission budget (spec: 5 seconds). */
    DNC_V2_ADMISSION_BUDGET_MS: z.coerce.number().int().min(100).max(5_000).default(5_000),
    /**
     * Draining: how long the listener stays open, serving, with readiness answering 503 (spec, GET
     * /v1/ready: "503 when the process is draining"), before it closes and in-flight requests finish.
     * Lets a load balancer that polls readiness see the drain; behind Kubernetes the chart's preStop
     * delay removes the endpoint before the signal.
     */
    DNC_DRAIN_DELAY_MS: z.coerce.number().int().min(0).max(60_000).default(1_000),
    /** A client has this long to send its request headers. */
    DNC_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(120_000).default(10_000),
    /** A client has this long to send its whole request, body included (a slow body holds a socket). */
    DNC_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(600_000).default(60_000),
    /**
     * A connection with no byte moving either way for this long is closed (a client that never reads
     * its answer); longer than the v1 budget, during which a request's socket is silent.
     */
    DNC_SOCKET_IDLE_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(600_000).default(30_000),
    /**
     * The longest a result download streams: the job scheduler's setting of the same name (set both alike;
     * the scheduler ends a download at its own). A reader slow but steady is served that long (25 MiB in
     * 15 minutes: about 0.23 Mbit/s); one that stops reading is closed by DNC_SOCKET_IDLE_TIMEOUT_MS.
     */
    DNC_RESULT_STREAM_MAX_MS: z.coerce.number().int().min(100).max(3_600_000).default(900_000),
    /**
     * Result downloads this gateway serves at once, in all and for one organization (kit ResultStreams):
     * each holds up to a stream window of the result (4 MiB) for its reader. One over either is answered
     * 503 platform_failure with Retry-After. The job scheduler's settings of the same names bound its own.
     */
    DNC_RESULT_STREAMS_MAX: z.coerce.number().int().min(1).max(10_000).default(32),
    DNC_RESULT_STREAMS_PER_ORG: z.coerce.number().int().min(1).max(10_000).default(4),
    /** An idle keep-alive connection is closed after this (longer than a load balancer's idle timeout). */
    DNC_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(600_000).default(72_000),
    /**
     * Memory the request bodies in flight may take, estimated from their declared size (see
     * plugins/request-bounds.ts). A body that does not fit waits, then gets 503 with Retry-After.
     */
    DNC_BODY_MEMORY_BUDGET_MIB: z.coerce.number().int().min(64).max(16_384).default(192),
    /** How long a large body may wait for room in the budget before its 503. */
    DNC_BODY_MEMORY_WAIT_MS: z.coerce.number().int().min(0).max(60_000).default(2_000),
    /**
     * Send a v1 request's adapter Check beside Admit for a key admitted moments ago (flows/early-check.ts);
     * 0 waits for Admit every time (say, for a country whose registry bills every lookup).
     */
    DNC_EARLY_CHECK: flag(true),
    /** Trust X-Forwarded-For from this many proxies (for the abuse guard's client address). */
    DNC_TRUST_PROXY_HOPS: z.coerce.number().int().min(0).max(5).default(0),
  })
  .superRefine((c, ctx) => {
    // Found by a review (2026-12-03): a previous secret without its version (or the reverse) was ignored
    // in silence, and a previous version equal to the current one made every stored fingerprint of it a
    // mismatch: exact retries refused 409 idempotency_key_reused, which clients are told not to retry.
    const previous = [c.DNC_FINGERPRINT_PREVIOUS_SECRET, c.DNC_FINGERPRINT_PREVIOUS_VERSION];
    if (previous.filter((v) => v !== undefined).length === 1)
      ctx.addIssue({
        code: 'custom',
        path: ['DNC_FINGERPRINT_PREVIOUS_VERSION'],
        message: 'DNC_FINGERPRINT_PREVIOUS_SECRET and DNC_FINGERPRINT_PREVIOUS_VERSION go together',
      });
    if (c.DNC_FINGERPRINT_PREVIOUS_VERSION === c.DNC_FINGERPRINT_VERSION)
      ctx.addIssue({
        code: 'custom',
        path: ['DNC_FINGERPRINT_PREVIOUS_VERSION'],
        message: 'a rotation gives the new secret a new DNC_FINGERPRINT_VERSION',
      });
  });

export type GatewayConfig = z.infer<typeof gatewayConfig>;
