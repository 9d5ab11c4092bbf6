import { DncApiError, DncConnectionError, DncTimeoutError } from './errors.js';
import { ERROR_CODES } from './gen/contract.js';
import { backoffDelay, isRetryableAnswer, parseRetryAfter, retryAfterDelay, sleep } from './retry.js';
import type { ErrorCode } from './types.js';

/** What a caller may learn of the HTTP answer besides its body (see `CallOptions.onResponse`). */
export interface ResponseInfo {
  status: number;
  /** `X-Request-Id` of the answer, or the one this SDK sent. Quote it to support. */
  requestId: string | undefined;
  headers: Headers;
}

export interface TransportOptions {
  apiKey: string;
  baseUrl: string;
  fetch: typeof fetch;
  maxRetries: number;
  retryBaseDelayMs: number;
  retryMaxDelayMs: number;
  maxRetryAfterMs: number;
  attemptTimeoutMs: number;
  random: () => number;
  userAgent: string;
}

export interface RequestSpec {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  idempotencyKey?: string;
  signal?: AbortSignal | undefined;
  /** Bound of the whole call, retries and waits included. */
  timeoutMs?: number | undefined;
  /**
   * A body that may take long to read (a result download, up to 25 MiB): the attempt's timeout bounds the
   * wait for the answer's headers and then each wait for the body's next bytes, not the whole read, so a
   * slow but steady link gets the whole document and a stalled one is retried.
   */
  streamedBody?: boolean;
  onResponse?: ((info: ResponseInfo) => void) | undefined;
}

export interface Answer<T> extends ResponseInfo {
  body: T;
}

/** One logical call over HTTP: bounded retries, the same idempotency key on every attempt, a request id per attempt. */
export class Transport {
  constructor(readonly options: TransportOptions) {}

  get random(): () => number {
    return this.options.random;
  }

  async request<T>(spec: RequestSpec): Promise<Answer<T>> {
    // A timer of its own, not AbortSignal.timeout inside AbortSignal.any: on Node 20 such a timeout signal,
    // once nothing else holds it, is garbage collected and never fires (nodejs/node#57736).
    const deadline = spec.timeoutMs === undefined ? undefined : new AttemptTimer(spec.timeoutMs);
    const signal =
      spec.signal && deadline
        ? AbortSignal.any([spec.signal, deadline.signal])
        : (spec.signal ?? deadline?.signal);
    const sent = { requestId: undefined as string | undefined };
    try {
      return await this.#attempts<T>(spec, signal, sent);
    } catch (caught) {
      const error =
        deadline?.signal.aborted && !spec.signal?.aborted && !(caught instanceof DncApiError)
          ? new DncTimeoutError(
              `${spec.method} ${spec.path}: no answer within ${spec.timeoutMs} ms`,
              sent.requestId,
            )
          : caught;
      // The key to retry with: the caller may not know it (generated here).
      if (
        error instanceof DncApiError ||
        error instanceof DncConnectionError ||
        error instanceof DncTimeoutError
      )
        error.idempotencyKey = spec.idempotencyKey;
      throw error;
    } finally {
      deadline?.clear();
    }
  }

  async #attempts<T>(
    spec: RequestSpec,
    signal: AbortSignal | undefined,
    sent: { requestId: string | undefined },
  ): Promise<Answer<T>> {
    const o = this.options;
    const headers: Record<string, string> = {
      authorization: `Bearer ${o.apiKey}`,
      accept: 'application/json',
      'user-agent': o.userAgent,
    };
    if (spec.body !== undefined) headers['content-type'] = 'application/json';
    if (spec.idempotencyKey !== undefined) headers['idempotency-key'] = spec.idempotencyKey;
    const payload = spec.body === undefined ? null : JSON.stringify(spec.body);
    const url = o.baseUrl + spec.path;
    const backoff = { baseDelayMs: o.retryBaseDelayMs, maxDelayMs: o.retryMaxDelayMs, random: o.random };

    for (let attempt = 0; ; attempt++) {
      // No answer, or one cut short: the outcome is unknown, so retried with the same key (an exact retry
      // is the first request's answer, never a second charge or a second job), or given up.
      const unknownOutcome = async (error: unknown, what: string, requestId: string | undefined) => {
        signal?.throwIfAborted();
        if (attempt >= o.maxRetries) {
          throw new DncConnectionError(`${spec.method} ${spec.path}: ${what}`, { cause: error, requestId });
        }
        await sleep(backoffDelay(attempt, backoff), signal);
      };
      signal?.throwIfAborted();
      sent.requestId = globalThis.crypto.randomUUID();
      headers['x-request-id'] = sent.requestId;
      const attemptTimer = new AttemptTimer(o.attemptTimeoutMs);
      const timeout = attemptTimer.signal;
      try {
        let response: Response;
        try {
          response = await o.fetch(url, {
            method: spec.method,
            headers,
            body: payload,
            // Spec, Authentication 2: keys "are sent only to {base_url}". A redirect is not followed (it would
            // carry the key elsewhere): it is answered as an unexpected response, not retried.
            redirect: 'manual',
            signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
          });
        } catch (error) {
          // Connection failure or attempt timeout.
          await unknownOutcome(error, 'service unreachable', sent.requestId);
          continue;
        }
        const info: ResponseInfo = {
          status: response.status,
          requestId: response.headers.get('x-request-id') ?? sent.requestId,
          headers: response.headers,
        };
        spec.onResponse?.(info);

        // A streamed body's first piece gets its own wait, from the headers on.
        if (spec.streamedBody) attemptTimer.rearm();
        if (response.ok) {
          let text: string;
          try {
            text = spec.streamedBody ? await readRearming(response, attemptTimer) : await response.text();
          } catch (error) {
            // A connection reset, a body shorter than its Content-Length, the attempt's time up mid-body.
            await unknownOutcome(error, 'the answer was cut short', info.requestId);
            continue;
          }
          try {
            return { ...info, body: JSON.parse(text) as T };
          } catch (error) {
            // A scrub call's success whose body is not the service's (a proxy's page, a body mangled on its
            // way): the request may have been served and charged, so it is an unknown outcome, asked again
            // with the same key (found by a review, 2026-12-05: it was thrown as final, its key never shown).
            // A read stays final: a host that answers every path with a page would keep a wait polling.
            if (spec.idempotencyKey !== undefined) {
              await unknownOutcome(error, 'the answer is not JSON', info.requestId);
              continue;
            }
            throw new DncApiError(
              response.status,
              'unexpected_response',
              'the response body is not JSON',
              undefined,
              info.requestId,
            );
          }
        }

        const error = await toApiError(response, info.requestId);
        if (!isRetryableAnswer(error.status, error.code) || attempt >= o.maxRetries) throw error;
        // The limit is the service's Retry-After itself: the jitter added to it cannot push it over.
        if (error.retryAfter !== undefined && error.retryAfter * 1000 > o.maxRetryAfterMs) throw error;
        // Never sooner than the service asked, and never sooner than the backoff: a Retry-After of 0, or the
        // same 1 s every time, still backs off exponentially (bounded by retryMaxDelayMs).
        const delay = Math.max(
          error.retryAfter !== undefined ? retryAfterDelay(error.retryAfter, o.random) : 0,
          backoffDelay(attempt, backoff),
        );
        await sleep(delay, signal);
      } finally {
        attemptTimer.clear();
      }
    }
  }
}

/**
 * An attempt's timeout (and a request's whole deadline): aborts `signal` once `ms` pass without a `rearm`.
 * Its timer never holds the process.
 */
class AttemptTimer {
  readonly #controller = new AbortController();
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly ms: number) {
    this.rearm();
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Done with: nothing of the attempt stays held until the timer would have fired. */
  clear(): void {
    clearTimeout(this.#timer);
  }

  rearm(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(
      () => this.#controller.abort(new DOMException('the attempt timed out', 'TimeoutError')),
      this.ms,
    );
    (this.#timer as { unref?: () => void }).unref?.();
  }
}

/** The body as text, the attempt's timer rearmed by every piece that arrives. */
async function readRearming(response: Response, timer: AttemptTimer): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    timer.rearm();
    text += decoder.decode(value, { stream: true });
  }
}

async function toApiError(response: Response, requestId: string | undefined): Promise<DncApiError> {
  const retryAfter = parseRetryAfter(response.headers.get('retry-after'));
  let code: ErrorCode | 'unexpected_response' = 'unexpected_response';
  let message = `HTTP ${response.status}`;
  try {
    const body = (await response.json()) as { error?: unknown; message?: unknown };
    if (typeof body.error === 'string' && Object.hasOwn(ERROR_CODES, body.error)) {
      code = body.error as ErrorCode;
      message = typeof body.message === 'string' ? body.message : body.error;
    } else if (typeof body.error === 'string') {
      message = `HTTP ${response.status} ${body.error.slice(0, 64)}`;
    }
  } catch {
    // Not JSON (e.g. an ingress's 502 page): keep the generic code.
  }
  return new DncApiError(response.status, code, message, retryAfter, requestId);
}
