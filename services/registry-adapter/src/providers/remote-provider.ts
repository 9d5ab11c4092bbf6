import { signalWithin } from '@dnc/kit';
import type { Logger } from 'pino';
import { type LookupResult, ProviderError, type ProviderState, type RegistryProvider } from './provider.js';
import { lookupAnswerLimit, RegistryHttp, RegistryHttpError } from './registry-http.js';

/**
 * Client of a registry that is only reachable through an API ("wash" registries). Wire protocol,
 * deliberately small so a country team can put a thin proxy in front of any real registry API:
 *
 *   POST <base>/v1/lookup   {"country":"es","numbers":["+34612345678", ...]}
 *   200 {"registered":[true,false,...], "snapshot_id":"..."}     one boolean per number, same order
 *   503 {"status":"maintenance","until":"<ISO time>"}             planned maintenance (not retried)
 *   429 / 5xx / timeout / connection error                        retried, then unavailable
 *
 * Each number is `+`, the country's calling code and the registry's key of the line: the national number
 * as national registries list it, which is not always libphonenumber's E.164. Argentina's is the 10-digit
 * line without the mobile `9` (`+54 9 11 4123 4567` is sent `+541141234567`). A proxy in front of a
 * registry that keys lines otherwise converts them: matched on libphonenumber's form instead, a
 * registered Argentine mobile would be answered not registered (found by a review, 2026-12-05;
 * DOMAIN.md, "two different E.164 strings").
 *
 * HTTPS only, redirects never followed, answers read up to the size a batch can need (registry-http).
 * Batches of `batchSize`, each request with its own deadline (never beyond the caller's), bounded
 * retries with exponential backoff and full jitter, and a circuit breaker that fails fast while the
 * registry is down. Failures leave as ProviderError('maintenance' | 'unavailable') only.
 */
export interface RemoteProviderOptions {
  /** `https://...` only. */
  baseUrl: string;
  /** PEM trust anchors of a registry behind a private CA (instead of the system roots). */
  ca?: string;
  country: string;
  toE164: (key: number) => string;
  batchSize: number;
  timeoutMs: number;
  retries: number;
  /** Consecutive failed lookups that open the breaker. */
  breakerThreshold?: number;
  breakerCooldownMs?: number;
  concurrency?: number;
  backoffBaseMs?: number;
  logger: Logger;
}

class RetryableFailure extends Error {}

export class RemoteProvider implements RegistryProvider {
  readonly kind = 'remote';
  private consecutiveFailures = 0;
  private openUntil = 0;
  private halfOpenTrial = false;
  private maintenanceUntil: Date | undefined;
  private lastSnapshotId = '';
  private lastSuccess: Date | undefined;

  private readonly http: RegistryHttp;

  constructor(private readonly o: RemoteProviderOptions) {
    this.http = new RegistryHttp({ baseUrl: o.baseUrl, ca: o.ca, maxSockets: o.concurrency ?? 4 });
  }

  close(): void {
    this.http.close();
  }

  private get threshold(): number {
    return this.o.breakerThreshold ?? 5;
  }

  state(): ProviderState {
    const now = Date.now();
    const base = {
      snapshotId: this.lastSnapshotId,
      registrySize: 0,
      ...(this.lastSuccess ? { snapshotTime: this.lastSuccess } : {}),
    };
    if (this.maintenanceUntil && this.maintenanceUntil.getTime() > now) {
      return { ...base, status: 'maintenance', maintenanceUntil: this.maintenanceUntil };
    }
    if (this.openUntil > now) return { ...base, status: 'unavailable' };
    return { ...base, status: 'serving' };
  }

  async lookup(keys: Float64Array, signal: AbortSignal): Promise<LookupResult> {
    const now = Date.now();
    if (this.maintenanceUntil && this.maintenanceUntil.getTime() > now) {
      throw new ProviderError(
        'maintenance',
        'remote registry in maintenance',
        Math.ceil((this.maintenanceUntil.getTime() - now) / 1000),
        this.maintenanceUntil,
      );
    }
    if (this.openUntil > now) {
      throw new ProviderError('unavailable', 'circuit open', Math.ceil((this.openUntil - now) / 1000));
    }
    if (this.consecutiveFailures >= this.threshold) {
      // Half-open: one trial call at a time; the others keep failing fast until it succeeds.
      if (this.halfOpenTrial) throw new ProviderError('unavailable', 'circuit half-open', 1);
      this.halfOpenTrial = true;
    }
    const registered = new Uint8Array(keys.length);
    if (keys.length === 0) return { snapshotId: this.lastSnapshotId, registered };
    const asked = new Date();
    try {
      const batches: [number, number][] = [];
      for (let i = 0; i < keys.length; i += this.o.batchSize)
        batches.push([i, Math.min(keys.length, i + this.o.batchSize)]);
      let snapshotId = '';
      let next = 0;
      const worker = async () => {
        while (next < batches.length) {
          const [from, to] = batches[next++]!;
          const numbers: string[] = [];
          for (let i = from; i < to; i++) numbers.push(this.o.toE164(keys[i] as number));
          const answer = await this.batchWithRetries(numbers, signal);
          for (let i = 0; i < answer.registered.length; i++)
            registered[from + i] = answer.registered[i] ? 1 : 0;
          if (!snapshotId) snapshotId = answer.snapshotId;
        }
      };
      await Promise.all(Array.from({ length: Math.min(this.o.concurrency ?? 4, batches.length) }, worker));
      this.consecutiveFailures = 0;
      this.halfOpenTrial = false;
      this.lastSuccess = new Date();
      this.lastSnapshotId = snapshotId || 'remote';
      // A remote registry answers live: the answer is as fresh as the moment it was asked.
      return { snapshotId: this.lastSnapshotId, snapshotTime: asked, registered };
    } catch (error) {
      this.halfOpenTrial = false;
      if (signal.aborted) throw error;
      if (error instanceof ProviderError && error.errorClass === 'maintenance') throw error;
      this.consecutiveFailures++;
      if (this.consecutiveFailures >= this.threshold) {
        this.openUntil = Date.now() + (this.o.breakerCooldownMs ?? 10_000);
        this.o.logger.warn({ country: this.o.country }, 'remote registry circuit opened');
      }
      throw error instanceof ProviderError
        ? error
        : new ProviderError('unavailable', 'remote registry failed', 5);
    }
  }

  private async batchWithRetries(
    numbers: string[],
    signal: AbortSignal,
  ): Promise<{ registered: boolean[]; snapshotId: string }> {
    const base = this.o.backoffBaseMs ?? 100;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.batch(numbers, signal);
      } catch (error) {
        if (signal.aborted) throw signal.reason ?? error;
        if (!(error instanceof RetryableFailure) || attempt >= this.o.retries) {
          if (error instanceof ProviderError) throw error;
          throw new ProviderError('unavailable', 'remote registry failed', 5);
        }
        // Exponential backoff with full jitter, cut short by the caller's deadline.
        const delay = Math.random() * base * 2 ** attempt;
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, delay);
          signal.addEventListener(
            'abort',
            () => {
              clearTimeout(t);
              resolve();
            },
            { once: true },
          );
        });
      }
    }
  }

  private async batch(
    numbers: string[],
    signal: AbortSignal,
  ): Promise<{ registered: boolean[]; snapshotId: string }> {
    let res: { status: number; body: Buffer };
    // Not AbortSignal.timeout inside AbortSignal.any: collected, it never fires (kit deadline-signal.ts).
    const within = signalWithin(this.o.timeoutMs, signal);
    try {
      res = await this.http.post(
        '/v1/lookup',
        { country: this.o.country, numbers },
        { signal: within.signal, maxBytes: lookupAnswerLimit(numbers.length) },
      );
    } catch (error) {
      // A redirect or an oversized answer is a registry misbehaving, not a blip: not retried.
      if (error instanceof RegistryHttpError && (error.kind === 'redirect' || error.kind === 'too_large')) {
        this.o.logger.warn(
          { country: this.o.country, problem: error.kind },
          'remote registry answer refused',
        );
        throw new ProviderError('unavailable', 'remote registry answer refused', 5);
      }
      throw new RetryableFailure('request failed');
    } finally {
      within.clear();
    }
    const json = <T>(): T | undefined => {
      try {
        return JSON.parse(res.body.toString('utf8')) as T;
      } catch {
        return undefined;
      }
    };
    if (res.status === 503) {
      const body = json<{ status?: string; until?: string }>() ?? {};
      if (body.status === 'maintenance') {
        const until = body.until ? new Date(body.until) : undefined;
        if (until && !Number.isNaN(until.getTime())) this.maintenanceUntil = until;
        const retry = until ? Math.max(1, Math.ceil((until.getTime() - Date.now()) / 1000)) : 60;
        throw new ProviderError('maintenance', 'remote registry in maintenance', retry, until);
      }
      throw new RetryableFailure('unavailable');
    }
    if (res.status === 429 || res.status >= 500) throw new RetryableFailure(`status ${res.status}`);
    if (res.status !== 200) throw new ProviderError('unavailable', 'remote registry refused the request', 5);
    const body = json<{ registered?: unknown; snapshot_id?: unknown }>();
    if (!body) throw new RetryableFailure('bad body');
    const registered = body.registered;
    if (
      !Array.isArray(registered) ||
      registered.length !== numbers.length ||
      registered.some((r) => typeof r !== 'boolean')
    ) {
      // A malformed answer is never read as "not registered".
      throw new ProviderError('unavailable', 'remote registry answered malformed data', 5);
    }
    this.maintenanceUntil = undefined;
    return {
      registered: registered as boolean[],
      snapshotId: typeof body.snapshot_id === 'string' ? body.snapshot_id : '',
    };
  }
}
