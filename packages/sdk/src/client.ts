import { DncApiError, DncConnectionError, DncJobError, DncWaitTimeoutError } from './errors.js';
import { backoffDelay, isRetryableAnswer, parseRetryAfter, retryAfterDelay, sleep } from './retry.js';
import type { DurableScrubRequest, ScrubJobStatus, ScrubRequest, ScrubResult } from './types.js';

export const SDK_VERSION = '0.1.0';
const IDEMPOTENCY_KEY = /^[\x21-\x7E]{1,255}$/;
const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'expired']);

export interface DncClientOptions {
  /** API key (server-side use only); sent as `Authorization: Bearer <key>` and never logged. */
  apiKey: string;
  /** Scheme, host and port, e.g. `https://api.example.com`. Default `http://127.0.0.1:8080`. */
  baseUrl?: string;
  /** A `fetch` implementation; default the global one. */
  fetch?: typeof fetch;
  /** Retries of one logical call after the first attempt. Default 5. */
  maxRetries?: number;
  /** First backoff step when no Retry-After is given. Default 500 ms. */
  retryBaseDelayMs?: number;
  /** Cap of one backoff step. Default 30 s. */
  retryMaxDelayMs?: number;
  /** A Retry-After longer than this is not waited for: the error is thrown instead. Default 120 s. */
  maxRetryAfterMs?: number;
  /** Timeout of one HTTP attempt (v1 has a 15 s budget on the service). Default 60 s. */
  timeoutMs?: number;
  /** Source of jitter, in [0, 1). Default Math.random. */
  random?: () => number;
}

export interface CallOptions {
  signal?: AbortSignal;
}

export interface ScrubOptions extends CallOptions {
  /** One key per logical request; generated (UUID) when absent and reused across the retries of this call. */
  idempotencyKey?: string;
}

export interface WaitOptions extends CallOptions {
  /** Called with the job resource after every poll. */
  onProgress?: (job: ScrubJobStatus) => void;
  /** Give up (DncWaitTimeoutError) after this long. Default 24 h + 5 min (the service's hard cap is 24 h). */
  maxWaitMs?: number;
  /** First poll interval. Default 1 s. */
  pollIntervalMs?: number;
  /** Cap of the poll interval. Default 15 s. */
  maxPollIntervalMs?: number;
}

export type RunOptions = ScrubOptions & Omit<WaitOptions, 'signal'>;

interface RequestSpec {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  idempotencyKey?: string;
  signal?: AbortSignal | undefined;
}

interface Answer<T> {
  status: number;
  body: T;
  headers: Headers;
}

function idempotencyKeyFor(options: ScrubOptions | undefined): string {
  const key = options?.idempotencyKey ?? globalThis.crypto.randomUUID();
  if (!IDEMPOTENCY_KEY.test(key))
    throw new TypeError('idempotencyKey must be 1 to 255 visible ASCII characters, no spaces');
  return key;
}

function jobPath(id: string, suffix = ''): string {
  return `/v2/scrub/${encodeURIComponent(id)}${suffix}`;
}

export class DncClient {
  readonly jobs: Jobs;
  readonly #apiKey: string;
  readonly #baseUrl: string;
  readonly #fetch: typeof fetch;
  readonly #maxRetries: number;
  readonly #retryBaseDelayMs: number;
  readonly #retryMaxDelayMs: number;
  readonly #maxRetryAfterMs: number;
  readonly #timeoutMs: number;
  readonly #random: () => number;

  constructor(options: DncClientOptions) {
    if (!options.apiKey) throw new TypeError('apiKey is required');
    this.#apiKey = options.apiKey;
    this.#baseUrl = (options.baseUrl ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#maxRetries = options.maxRetries ?? 5;
    this.#retryBaseDelayMs = options.retryBaseDelayMs ?? 500;
    this.#retryMaxDelayMs = options.retryMaxDelayMs ?? 30_000;
    this.#maxRetryAfterMs = options.maxRetryAfterMs ?? 120_000;
    this.#timeoutMs = options.timeoutMs ?? 60_000;
    this.#random = options.random ?? Math.random;
    this.jobs = new Jobs(this);
  }

  /** v1: synchronous scrub of up to 10,000 numbers. */
  async scrub(request: ScrubRequest, options?: ScrubOptions): Promise<ScrubResult> {
    const idempotencyKey = idempotencyKeyFor(options);
    const answer = await this.request<ScrubResult>({
      method: 'POST',
      path: '/v1/scrub',
      body: request,
      idempotencyKey,
      signal: options?.signal,
    });
    return answer.body;
  }

  /** @internal One logical call: bounded retries, the same idempotency key on every attempt. */
  async request<T>(spec: RequestSpec): Promise<Answer<T>> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#apiKey}`,
      accept: 'application/json',
      'user-agent': `dnc-sdk/${SDK_VERSION}`,
    };
    if (spec.body !== undefined) headers['content-type'] = 'application/json';
    if (spec.idempotencyKey !== undefined) headers['idempotency-key'] = spec.idempotencyKey;
    const payload = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    const url = this.#baseUrl + spec.path;
    const backoff = {
      baseDelayMs: this.#retryBaseDelayMs,
      maxDelayMs: this.#retryMaxDelayMs,
      random: this.#random,
    };

    for (let attempt = 0; ; attempt++) {
      spec.signal?.throwIfAborted();
      const timeout = AbortSignal.timeout(this.#timeoutMs);
      const signal = spec.signal ? AbortSignal.any([spec.signal, timeout]) : timeout;
      let response: Response;
      try {
        response = await this.#fetch(url, { method: spec.method, headers, body: payload ?? null, signal });
      } catch (error) {
        spec.signal?.throwIfAborted();
        // Connection failure or attempt timeout: the outcome is unknown, so retry with the same key.
        if (attempt >= this.#maxRetries) {
          throw new DncConnectionError(`${spec.method} ${spec.path}: service unreachable`, { cause: error });
        }
        await sleep(backoffDelay(attempt, backoff), spec.signal);
        continue;
      }

      if (response.ok) {
        const text = await response.text();
        try {
          return { status: response.status, body: JSON.parse(text) as T, headers: response.headers };
        } catch {
          throw new DncApiError(
            response.status,
            'unexpected_response',
            'the response body is not JSON',
            undefined,
          );
        }
      }

      const error = await toApiError(response);
      if (!isRetryableAnswer(error.status, error.code) || attempt >= this.#maxRetries) throw error;
      const delay =
        error.retryAfter !== undefined
          ? retryAfterDelay(error.retryAfter, this.#random)
          : backoffDelay(attempt, backoff);
      if (delay > this.#maxRetryAfterMs) throw error;
      await sleep(delay, spec.signal);
    }
  }
}

async function toApiError(response: Response): Promise<DncApiError> {
  const retryAfter = parseRetryAfter(response.headers.get('retry-after'));
  let code = 'unexpected_response';
  let message = `HTTP ${response.status}`;
  try {
    const body = (await response.json()) as { error?: unknown; message?: unknown };
    if (typeof body.error === 'string') {
      code = body.error;
      message = typeof body.message === 'string' ? body.message : body.error;
    }
  } catch {
    // Not JSON (e.g. a proxy page): keep the generic code.
  }
  return new DncApiError(response.status, code, message, retryAfter);
}

/** v2 durable jobs. */
export class Jobs {
  readonly #client: DncClient;

  constructor(client: DncClient) {
    this.#client = client;
  }

  /** Admit a job of up to 500,000 numbers. An exact retry returns the same job (200 when it is already terminal). */
  async create(request: DurableScrubRequest, options?: ScrubOptions): Promise<ScrubJobStatus> {
    const idempotencyKey = idempotencyKeyFor(options);
    const answer = await this.#client.request<ScrubJobStatus>({
      method: 'POST',
      path: '/v2/scrub',
      body: request,
      idempotencyKey,
      signal: options?.signal,
    });
    return answer.body;
  }

  async get(id: string, options?: CallOptions): Promise<ScrubJobStatus> {
    return (
      await this.#client.request<ScrubJobStatus>({
        method: 'GET',
        path: jobPath(id),
        signal: options?.signal,
      })
    ).body;
  }

  /** The result of a `succeeded` job (409 job_result_not_ready otherwise). */
  async result(id: string, options?: CallOptions): Promise<ScrubResult> {
    return (
      await this.#client.request<ScrubResult>({
        method: 'GET',
        path: jobPath(id, '/result'),
        signal: options?.signal,
      })
    ).body;
  }

  /**
   * Idempotent. The returned job is terminal, or still `running` with `cancel_requested` while an external
   * registry call is reconciled (use `wait` to see it reach `cancelled`).
   */
  async cancel(id: string, options?: CallOptions): Promise<ScrubJobStatus> {
    return (
      await this.#client.request<ScrubJobStatus>({
        method: 'POST',
        path: jobPath(id, '/cancel'),
        signal: options?.signal,
      })
    ).body;
  }

  /** Poll until the job is terminal, with bounded exponential backoff and jitter, honoring Retry-After. */
  async wait(id: string, options: WaitOptions = {}): Promise<ScrubJobStatus> {
    const maxWaitMs = options.maxWaitMs ?? 24 * 3_600_000 + 300_000;
    const maxInterval = options.maxPollIntervalMs ?? 15_000;
    let interval = options.pollIntervalMs ?? 1_000;
    const started = Date.now();
    for (;;) {
      const answer = await this.#client.request<ScrubJobStatus>({
        method: 'GET',
        path: jobPath(id),
        signal: options.signal,
      });
      const job = answer.body;
      options.onProgress?.(job);
      if (TERMINAL.has(job.status)) return job;
      const remaining = maxWaitMs - (Date.now() - started);
      if (remaining <= 0) throw new DncWaitTimeoutError(job);
      const retryAfter = parseRetryAfter(answer.headers.get('retry-after'));
      const jittered = interval * (0.8 + Math.random() * 0.4);
      const delay = Math.max(jittered, retryAfter === undefined ? 0 : retryAfter * 1000);
      await sleep(Math.min(delay, remaining), options.signal);
      interval = Math.min(maxInterval, interval * 1.5);
    }
  }

  /** create + wait + result. Throws DncJobError when the job ends failed, expired or cancelled. */
  async run(request: DurableScrubRequest, options: RunOptions & CallOptions = {}): Promise<ScrubResult> {
    const job = await this.create(request, options);
    const done = TERMINAL.has(job.status) ? job : await this.wait(job.job_id, options);
    if (done.status !== 'succeeded') throw new DncJobError(done);
    return this.result(done.job_id, options);
  }
}
