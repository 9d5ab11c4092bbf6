import { describe, expect, it } from 'vitest';
import {
  DEFAULT_MAX_AGE_SECONDS,
  FreshnessGuard,
  isFresh,
  snapshotAgeSeconds,
} from '../src/providers/freshness.js';
import {
  type LookupResult,
  ProviderError,
  type ProviderState,
  type RegistryProvider,
} from '../src/providers/provider.js';

const DAY = 86_400;
const T0 = new Date('2026-10-01T00:00:00Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

/** A provider answering from one snapshot taken at T0. */
class Snapshot implements RegistryProvider {
  readonly kind = 'local';
  async lookup(keys: Float64Array): Promise<LookupResult> {
    return { snapshotId: 's1', snapshotTime: T0, registered: new Uint8Array(keys.length) };
  }
  state(): ProviderState {
    return { status: 'serving', snapshotId: 's1', snapshotTime: T0, registrySize: 3 };
  }
}

describe('registry freshness (issue 19 item 4; DOMAIN: registries must be re-consulted)', () => {
  it('defaults follow the registries: ar 30 days (AAIP), sg 21 days (PDPC), au 30 days (ACMA)', () => {
    expect(DEFAULT_MAX_AGE_SECONDS['ar']).toBe(30 * DAY);
    expect(DEFAULT_MAX_AGE_SECONDS['sg']).toBe(21 * DAY);
    expect(DEFAULT_MAX_AGE_SECONDS['au']).toBe(30 * DAY);
    for (const cc of ['mx', 'ar', 'co', 'es', 'au', 'sg'])
      expect(DEFAULT_MAX_AGE_SECONDS[cc]).toBeGreaterThan(0);
  });

  it('a snapshot exactly at its maximum age is fresh; one second past it is not; none is never fresh', () => {
    expect(snapshotAgeSeconds(T0, at(90))).toBe(90);
    expect(isFresh(T0, 30 * DAY, at(30 * DAY))).toBe(true);
    expect(isFresh(T0, 30 * DAY, at(30 * DAY + 1))).toBe(false);
    expect(isFresh(undefined, 30 * DAY, T0)).toBe(false);
  });

  it('the guard answers from a fresh snapshot, and reports it serving', async () => {
    const guard = new FreshnessGuard(new Snapshot(), 30 * DAY, () => at(30 * DAY));
    await expect(guard.lookup(new Float64Array(2), AbortSignal.timeout(1000))).resolves.toMatchObject({
      snapshotTime: T0,
    });
    expect(guard.state().status).toBe('serving');
  });

  it('past the maximum age it refuses (unavailable, never an answer) and announces the country unavailable', async () => {
    const guard = new FreshnessGuard(new Snapshot(), 30 * DAY, () => at(30 * DAY + 1));
    const error = await guard.lookup(new Float64Array(2), AbortSignal.timeout(1000)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).errorClass).toBe('unavailable');
    expect(guard.state()).toMatchObject({ status: 'unavailable', snapshotTime: T0 });
  });
});
