import type { LookupResult, ProviderState, RegistryProvider } from './provider.js';
import { ProviderError } from './provider.js';

const DAY = 86_400;

/**
 * Default maximum age of the registry snapshot a country is served from, in seconds: the registry's legal
 * or practical refresh period (../shared/DOMAIN.md). Past it the country is not served: an old snapshot can
 * call "safe" a number registered since, which is the one bug that matters.
 *   ar  AAIP "No Llame": registered users must re-consult the list every 30 days.
 *   au  ACMA: a wash result is valid for 30 days.        sg  PDPC: a result is valid for 21 days.
 *   mx  REPEP and co CRC publish no shorter rule; their lists change continuously, so 30 days as for ar.
 *   es  Adigital Lista Robinson: consulted per campaign; 30 days.
 * DNC_REGISTRY_MAX_AGE_SECONDS overrides it per adapter (one deployment per country).
 */
export const DEFAULT_MAX_AGE_SECONDS: Record<string, number> = {
  ar: 30 * DAY,
  au: 30 * DAY,
  sg: 21 * DAY,
  mx: 30 * DAY,
  co: 30 * DAY,
  es: 30 * DAY,
};

/** Seconds a snapshot taken at `snapshotTime` has aged at `now`; undefined when there is none. */
export function snapshotAgeSeconds(snapshotTime: Date | undefined, now: Date): number | undefined {
  return snapshotTime === undefined
    ? undefined
    : Math.max(0, (now.getTime() - snapshotTime.getTime()) / 1000);
}

/** Whether a snapshot of that time may still be answered from (at the limit it may; one second past, not). */
export function isFresh(snapshotTime: Date | undefined, maxAgeSeconds: number, now: Date): boolean {
  const age = snapshotAgeSeconds(snapshotTime, now);
  return age !== undefined && age <= maxAgeSeconds;
}

/**
 * Refuses to answer from a snapshot older than the country's maximum age: lookups fail as `unavailable`
 * (the public 503 country_service_temporarily_unavailable) and the adapter announces itself unavailable,
 * so admission stops admitting the country instead of answering "safe" from stale data. Wraps any provider.
 */
export class FreshnessGuard implements RegistryProvider {
  constructor(
    private readonly inner: RegistryProvider,
    readonly maxAgeSeconds: number,
    private readonly now: () => Date = () => new Date(),
  ) {}

  get kind(): string {
    return this.inner.kind;
  }

  async lookup(keys: Float64Array, signal: AbortSignal): Promise<LookupResult> {
    const result = await this.inner.lookup(keys, signal);
    // Checked on the answer itself: the snapshot it was read from is the one that must be fresh.
    if (result.snapshotTime !== undefined && !isFresh(result.snapshotTime, this.maxAgeSeconds, this.now())) {
      throw new ProviderError('unavailable', 'registry snapshot older than its maximum age', 60);
    }
    return result;
  }

  state(): ProviderState {
    const state = this.inner.state();
    if (state.status === 'serving' && !isFresh(state.snapshotTime, this.maxAgeSeconds, this.now())) {
      return { ...state, status: 'unavailable' };
    }
    return state;
  }
}
