import {
  DncApiError,
  DncConnectionError,
  DncJobError,
  DncTimeoutError,
  DncWaitTimeoutError,
} from './errors.js';
import { IDEMPOTENCY_KEY_PATTERN, TERMINAL_JOB_STATUSES } from './gen/contract.js';
import { isRetryableAnswer, parseRetryAfter, sleep } from './retry.js';
import { type RequestSpec, type ResponseInfo, Transport } from './transport.js';
import type { DurableScrubRequest, ScrubJobStatus, ScrubRequest, ScrubResult } from './types.js';

/** Kept equal to package.json's version by a test. */
export const SDK_VERSION = '0.2.0';
const IDEMPOTENCY_KEY = new RegExp(IDEMPOTENCY_KEY_PATTERN);
/** What an `Authorization: Bearer` credential can hold (RFC 6750 b64token is narrower; keys here fit both). */
const API_KEY = /^[\x21-\x7e]+$/;
const TERMINAL: ReadonlySet<string> = new Set(TERMINAL_JOB_STATUSES);

export interface DncClientOptions {
  /** API key (server-side use only); sent as `Authorization: Bearer <key>` and never logged. */
  apiKey: string;
  /**
   * Scheme, host and port, e.g. `https://api.example.com`. Default `http://127.0.0.1:8080` (a local
   * stack). `http://` is taken for this machine only (localhost, 127.0.0.0/8, ::1): anywhere else the API
   * key would cross the network in clear, unless `allowInsecureHttp`.
   */
  baseUrl?: string;
  /** Allow `http://` to a host other than this machine (a private network you trust). Default false. */
  allowInsecureHttp?: boolean;
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
  /**
   * Timeout of one HTTP attempt (v1 has a 15 s budget on the service). Default 60 s. A result download's
   * attempt waits this long for the headers and then for each next piece of the body, however long the whole
   * document takes on a slow link.
   */
  timeoutMs?: number;
  /** Source of jitter, in [0, 1). The SDK draws every random number it needs from it. Default Math.random. */
  random?: () => number;
}

export interface CallOptions {
  signal?: AbortSignal;
  /**
   * Bound of this call, retries and Retry-After waits included; past it the call throws `DncTimeoutError`
   * (each attempt is also bounded by the client's `timeoutMs`). Default: no bound beyond the retries.
   */
  timeoutMs?: number;
  /** Called with the status, request id and headers of every HTTP answer of this call (retries included). */
  onResponse?: (info: ResponseInfo) => void;
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

/** Options of `jobs.run`: `timeoutMs` bounds each HTTP call; `maxWaitMs` bounds the wait for the job. */
export type RunOptions = ScrubOptions & Omit<WaitOptions, keyof CallOptions>;

function idempotencyKeyFor(options: ScrubOptions | undefined): string {
  const key = options?.idempotencyKey ?? globalThis.crypto.randomUUID();
  if (!IDEMPOTENCY_KEY.test(key))
    throw new TypeError('idempotencyKey must be 1 to 255 visible ASCII characters, no spaces');
  return key;
}

function jobPath(id: string, suffix = ''): string {
  return `/v2/scrub/${encodeURIComponent(id)}${suffix}`;
}

/** A failed poll a later one may not meet: no answer, or a retryable answer (429 but quota, 503, 502, 504). */
function pollMayRecover(error: unknown): boolean {
  if (error instanceof DncConnectionError) return true;
  return error instanceof DncApiError && isRetryableAnswer(error.status, error.code);
}

function call(options: CallOptions | undefined): Pick<RequestSpec, 'signal' | 'timeoutMs' | 'onResponse'> {
  return { signal: options?.signal, timeoutMs: options?.timeoutMs, onResponse: options?.onResponse };
}

/** Hosts an `http://` base URL may name: this machine only. */
const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/**
 * The base URL without trailing slashes; refused (TypeError, naming the scheme and host only) when it is
 * not http(s), or is http to another machine without `allowInsecureHttp`: the key would travel in clear.
 */
function checkedBaseUrl(raw: string, allowInsecureHttp: boolean): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TypeError('baseUrl must be an absolute http(s) URL, e.g. https://api.example.com');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new TypeError('baseUrl must be an https:// URL (or http:// to this machine)');
  // Refused, never echoed: fetch refuses such a URL (retried as unreachable), and messages name the URL.
  if (url.username || url.password)
    throw new TypeError('baseUrl must not carry a user name or password: the API key authenticates');
  if (url.protocol === 'http:' && !LOOPBACK.test(url.hostname) && !allowInsecureHttp)
    throw new TypeError(
      `baseUrl http://${url.host} would send the API key in clear: use https://, or allowInsecureHttp on a network you trust`,
    );
  return raw.replace(/\/+$/, '');
}

export class DncClient {
  readonly jobs: Jobs;
  readonly #transport: Transport;

  constructor(options: DncClientOptions) {
    if (!options.apiKey) throw new TypeError('apiKey is required');
    // Checked here, never echoed: a key read with a line break or a space (a key file's second line) would
    // otherwise fail inside fetch, with the key in the error, and be retried as a network failure.
    if (!API_KEY.test(options.apiKey))
      throw new TypeError('apiKey must be visible ASCII characters without spaces or line breaks');
    this.#transport = new Transport({
      apiKey: options.apiKey,
      baseUrl: checkedBaseUrl(options.baseUrl ?? 'http://127.0.0.1:8080', options.allowInsecureHttp === true),
      fetch: options.fetch ?? globalThis.fetch,
      maxRetries: options.maxRetries ?? 5,
      retryBaseDelayMs: options.retryBaseDelayMs ?? 500,
      retryMaxDelayMs: options.retryMaxDelayMs ?? 30_000,
      maxRetryAfterMs: options.maxRetryAfterMs ?? 120_000,
      attemptTimeoutMs: options.timeoutMs ?? 60_000,
      random: options.random ?? Math.random,
      userAgent: `dnc-sdk/${SDK_VERSION}`,
    });
    this.jobs = new Jobs(this.#transport);
  }

  /** v1: synchronous scrub of up to 10,000 numbers. */
  async scrub(request: ScrubRequest, options?: ScrubOptions): Promise<ScrubResult> {
    const answer = await this.#transport.request<ScrubResult>({
      method: 'POST',
      path: '/v1/scrub',
      body: request,
      idempotencyKey: idempotencyKeyFor(options),
      ...call(options),
    });
    return answer.body;
  }
}

/** v2 durable jobs. */
export class Jobs {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Admit a job of up to 500,000 numbers. An exact retry returns the same job (200 when it is already terminal). */
  async create(request: DurableScrubRequest, options?: ScrubOptions): Promise<ScrubJobStatus> {
    const answer = await this.#transport.request<ScrubJobStatus>({
      method: 'POST',
      path: '/v2/scrub',
      body: request,
      idempotencyKey: idempotencyKeyFor(options),
      ...call(options),
    });
    return answer.body;
  }

  async get(id: string, options?: CallOptions): Promise<ScrubJobStatus> {
    return (
      await this.#transport.request<ScrubJobStatus>({ method: 'GET', path: jobPath(id), ...call(options) })
    ).body;
  }

  /** The result of a `succeeded` job (409 job_result_not_ready otherwise). */
  async result(id: string, options?: CallOptions): Promise<ScrubResult> {
    return (
      await this.#transport.request<ScrubResult>({
        method: 'GET',
        path: jobPath(id, '/result'),
        // Up to 25 MiB: the client's timeoutMs bounds each wait for the next bytes, not the whole download.
        streamedBody: true,
        ...call(options),
      })
    ).body;
  }

  /**
   * Idempotent. The returned job is terminal, or still `running` with `cancel_requested` while an external
   * registry call is reconciled (use `wait` to see it reach `cancelled`).
   */
  async cancel(id: string, options?: CallOptions): Promise<ScrubJobStatus> {
    return (
      await this.#transport.request<ScrubJobStatus>({
        method: 'POST',
        path: jobPath(id, '/cancel'),
        ...call(options),
      })
    ).body;
  }

  /**
   * Poll until the job is terminal, with bounded exponential backoff and jitter, honoring Retry-After.
   * `timeoutMs` bounds the whole wait (`DncTimeoutError`), `maxWaitMs` too (`DncWaitTimeoutError`, with the
   * job as last seen). A poll that fails with an error a later poll may not meet (no answer, 429 or 503,
   * after that poll's own retries) does not end the wait: the job runs on while the service or the
   * network is away for a while, and the next poll comes after the backoff or the error's Retry-After.
   */
  async wait(id: string, options: WaitOptions = {}): Promise<ScrubJobStatus> {
    return this.#wait(id, options, 'whole');
  }

  async #wait(id: string, options: WaitOptions, timeoutOf: 'whole' | 'each'): Promise<ScrubJobStatus> {
    const maxWaitMs = options.maxWaitMs ?? 24 * 3_600_000 + 300_000;
    const maxInterval = options.maxPollIntervalMs ?? 15_000;
    const random = this.#transport.random;
    let interval = options.pollIntervalMs ?? 1_000;
    const started = Date.now();
    const deadline =
      timeoutOf === 'whole' && options.timeoutMs !== undefined ? started + options.timeoutMs : undefined;
    let seen: ScrubJobStatus | undefined;
    let failed: unknown;
    for (;;) {
      let retryAfter: number | undefined;
      try {
        const answer = await this.#transport.request<ScrubJobStatus>({
          method: 'GET',
          path: jobPath(id),
          ...call(options),
          ...(deadline === undefined ? {} : { timeoutMs: Math.max(1, deadline - Date.now()) }),
        });
        seen = answer.body;
        options.onProgress?.(seen);
        if (TERMINAL.has(seen.status)) return seen;
        retryAfter = parseRetryAfter(answer.headers.get('retry-after'));
      } catch (error) {
        if (!pollMayRecover(error)) throw error;
        if (error instanceof DncApiError) retryAfter = error.retryAfter;
        failed = error;
      }
      const remaining = maxWaitMs - (Date.now() - started);
      if (remaining <= 0) {
        // No job seen at all: the error of the polls is the answer.
        if (seen === undefined) throw failed;
        throw new DncWaitTimeoutError(seen);
      }
      const jittered = interval * (0.8 + random() * 0.4);
      const delay = Math.min(Math.max(jittered, retryAfter === undefined ? 0 : retryAfter * 1000), remaining);
      if (deadline !== undefined && Date.now() + delay >= deadline) {
        await sleep(Math.max(0, deadline - Date.now()), options.signal);
        throw new DncTimeoutError(
          `GET ${jobPath(id)}: the job was not terminal within ${options.timeoutMs} ms`,
          undefined,
        );
      }
      await sleep(delay, options.signal);
      interval = Math.min(maxInterval, interval * 1.5);
    }
  }

  /**
   * create + wait + result. Throws DncJobError when the job ends failed, expired or cancelled. An error
   * after the job was created (a poll or the download failed) carries the job's `idempotencyKey` too:
   * `run` (or `create`) again with it returns the same job, never a second one (found by a review,
   * 2026-12-05: it was undefined, and retrying as the README shows made a second job, charged again).
   */
  async run(request: DurableScrubRequest, options: RunOptions = {}): Promise<ScrubResult> {
    const idempotencyKey = idempotencyKeyFor(options);
    const job = await this.create(request, { ...options, idempotencyKey });
    try {
      // As RunOptions say: `timeoutMs` bounds each call here, `maxWaitMs` the wait.
      const done = TERMINAL.has(job.status) ? job : await this.#wait(job.job_id, options, 'each');
      if (done.status !== 'succeeded') throw new DncJobError(done);
      return await this.result(done.job_id, options);
    } catch (error) {
      if (
        error instanceof DncApiError ||
        error instanceof DncConnectionError ||
        error instanceof DncTimeoutError ||
        error instanceof DncWaitTimeoutError
      )
        error.idempotencyKey = idempotencyKey;
      throw error;
    }
  }
}
