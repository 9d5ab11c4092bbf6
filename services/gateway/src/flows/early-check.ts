import { createHash } from 'node:crypto';
import { Counter, type Registry } from '@dnc/kit';
import type { ScrubRequest } from './admit.js';

/**
 * When a v1 request's adapter Check may be sent before admission answers (issue 18: the Check then
 * runs beside Admit instead of after it, one internal call less on the request's critical path).
 *
 * Only for a caller whose previous request was admitted moment ago, to the serving adapter admission
 * chose for the country then, and only when admission said that adapter's lookups are free (it answers
 * from its own copy of the registry: AdmitResponse.adapter_lookups_free). An adapter backed by a
 * registry's remote API, which may bill every lookup, is only asked for admitted requests, after Admit:
 * an early Check of a request admission then refuses would be a lookup paid for nothing (and numbers
 * sent to a third party for a refused request). A key that was never admitted, or whose last request
 * was refused (401, 402, 403, 429, ...), waits for Admit as before, so an unknown or refused key cannot
 * make adapters work, and a refused key stops at once. The early answer is only read once Admit admitted the
 * request; for any refusal it is dropped unread, and the answer is Admit's refusal as before (the check
 * order and every rule are unchanged: nothing is charged, stored or answered before Admit). A failed
 * early Check is ignored: the request checks again at the adapter admission chose, as without it.
 * What it may cost: a local lookup for a request refused right after an admitted one of the same key,
 * at most `maxInFlight` per key at a time. DNC_EARLY_CHECK=false turns it off.
 */
export interface EarlyCheckOptions {
  /** How long an admission of a key (and admission's adapter for a country) is trusted for this. */
  ttlMs: number;
  /** Early Checks of one key in flight at a time. */
  maxInFlight: number;
  /** Keys remembered (the oldest are forgotten first). */
  maxKeys: number;
}

export const EARLY_CHECK_DEFAULTS: EarlyCheckOptions = { ttlMs: 10_000, maxInFlight: 8, maxKeys: 10_000 };

interface KeyState {
  admittedAt: number;
  inFlight: number;
}

/** A caller's identity for this purpose: the authenticated key, or a hash of the presented one. */
function callerKey(request: ScrubRequest): string {
  const { caller } = request;
  if (caller.kind === 'authenticated') return `id:${caller.keyId}`;
  return `key:${createHash('sha256').update(caller.credentials.apiKey).digest('base64')}`;
}

export class EarlyChecks {
  private readonly keys = new Map<string, KeyState>();
  private readonly adapters = new Map<string, { address: string; seenAt: number }>();
  private readonly counted: Counter<'outcome'> | undefined;

  constructor(
    private readonly options: EarlyCheckOptions = EARLY_CHECK_DEFAULTS,
    metrics?: Registry,
    private readonly now: () => number = Date.now,
  ) {
    this.counted = metrics
      ? new Counter({
          name: 'dnc_gateway_early_checks_total',
          help: 'v1 adapter Checks sent before Admit answered, by what became of them.',
          labelNames: ['outcome'],
          registers: [metrics],
        })
      : undefined;
  }

  /** The adapter to send this request's Check to now, with the release of its slot; or undefined. */
  begin(request: ScrubRequest): { address: string; release: () => void } | undefined {
    const now = this.now();
    const adapter = this.adapters.get(request.country);
    if (!adapter || now - adapter.seenAt > this.options.ttlMs) return undefined;
    const key = callerKey(request);
    const state = this.keys.get(key);
    if (!state || now - state.admittedAt > this.options.ttlMs) return undefined;
    if (state.inFlight >= this.options.maxInFlight) return undefined;
    state.inFlight++;
    let released = false;
    return {
      address: adapter.address,
      release: () => {
        if (!released) state.inFlight--;
        released = true;
      },
    };
  }

  /**
   * Admit admitted the request: the adapter it chose is `adapterAddress`, and `lookupsFree` says whether
   * its lookups cost nothing. A country whose chosen adapter bills lookups gets no early Check.
   */
  admitted(request: ScrubRequest, adapterAddress: string, lookupsFree: boolean): void {
    const now = this.now();
    if (adapterAddress && lookupsFree)
      this.adapters.set(request.country, { address: adapterAddress, seenAt: now });
    else this.adapters.delete(request.country);
    const key = callerKey(request);
    const state = this.keys.get(key);
    this.keys.delete(key);
    this.keys.set(key, { admittedAt: now, inFlight: state?.inFlight ?? 0 });
    if (this.keys.size > this.options.maxKeys) this.keys.delete(this.keys.keys().next().value as string);
  }

  /** Admit refused the request, or its outcome is unknown: no early Check for this key until admitted. */
  refused(request: ScrubRequest): void {
    const key = callerKey(request);
    const state = this.keys.get(key);
    if (state) state.admittedAt = Number.NEGATIVE_INFINITY;
  }

  /** What became of an early Check: its answer used, dropped (Admit refused), or failed (checked again). */
  count(outcome: 'used' | 'dropped' | 'failed'): void {
    this.counted?.inc({ outcome });
  }
}
