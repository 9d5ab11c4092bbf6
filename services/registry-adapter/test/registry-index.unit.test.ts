import { registryv1 } from '@dnc/proto';
import { describe, expect, it } from 'vitest';
import { checkPhones } from '../src/check.js';
import { adapterConfig } from '../src/config.js';
import { RegistryIndex } from '../src/index/registry-index.js';
import { difference, isSortedDistinct, KeyBuffer, sortDistinct, union } from '../src/key-set.js';
import { DrillProvider } from '../src/providers/drill-provider.js';
import { type LookupResult, ProviderError, type RegistryProvider } from '../src/providers/provider.js';

const { Outcome } = registryv1;
const f64 = (...xs: number[]) => Float64Array.from(xs);

describe('registry index', () => {
  it('sorts, drops duplicates and finds exactly the keys it holds', () => {
    const keys = sortDistinct(f64(5512345678, 3331234567, 5512345678, 8181234567, 1, 9_007_199_254_740_991));
    expect([...keys]).toEqual([1, 3331234567, 5512345678, 8181234567, 9_007_199_254_740_991]);
    const index = RegistryIndex.fromSorted('1', new Date(), keys);
    for (const k of keys) expect(index.has(k)).toBe(true);
    for (const k of [0, 2, 3331234566, 3331234568, 5512345677, 9_007_199_254_740_990])
      expect(index.has(k)).toBe(false);
    expect(RegistryIndex.fromSorted('e', new Date(), new Float64Array(0)).has(1)).toBe(false);
  });

  it('agrees with a Set on random data', () => {
    let seed = 42;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed;
    };
    const raw = new Float64Array(50_000).map(() => 1_000_000_000 + (rnd() % 200_000));
    const set = new Set(raw);
    const index = RegistryIndex.fromSorted('r', new Date(), sortDistinct(raw.slice()));
    expect(index.size).toBe(set.size);
    for (let i = 0; i < 20_000; i++) {
      const k = 1_000_000_000 + (rnd() % 210_000);
      expect(index.has(k)).toBe(set.has(k));
    }
  });

  it('union and difference of sorted distinct keys', () => {
    expect([...union(f64(1, 3, 5), f64(2, 3, 6))]).toEqual([1, 2, 3, 5, 6]);
    expect([...union(f64(), f64(2))]).toEqual([2]);
    expect([...difference(f64(1, 2, 3, 5), f64(0, 2, 5, 9))]).toEqual([1, 3]);
    expect([...difference(f64(1, 2), f64())]).toEqual([1, 2]);
    expect(isSortedDistinct(f64(1, 1))).toBe(false);
  });

  it('KeyBuffer grows past its first block and returns sorted distinct keys', () => {
    const b = new KeyBuffer();
    for (let i = 200_000; i > 0; i--) b.push(i % 150_000 || 150_000);
    const keys = b.takeSortedDistinct();
    expect(keys.length).toBe(150_000);
    expect(keys[0]).toBe(1);
    expect(keys[149_999]).toBe(150_000);
    expect(isSortedDistinct(keys)).toBe(true);
  });
});

class FixedProvider implements RegistryProvider {
  readonly kind = 'fixed';
  calls: Float64Array[] = [];
  constructor(private readonly registered: Set<number>) {}
  async lookup(keys: Float64Array): Promise<LookupResult> {
    this.calls.push(keys.slice());
    return { snapshotId: 's1', registered: Uint8Array.from(keys, (k) => (this.registered.has(k) ? 1 : 0)) };
  }
  state() {
    return { status: 'serving' as const, snapshotId: 's1', registrySize: this.registered.size };
  }
}

describe('checkPhones', () => {
  // A normalizer stub: digits-only inputs are keys, `-N` spells an invalid outcome, anything else junk.
  const normalizer = {
    normalize: (s: string) => (/^\d+$/.test(s) ? Number(s) : /^-\d$/.test(s) ? Number(s) : Number.NaN),
  };

  it('answers in input order, looks up only valid keys, once per batch', async () => {
    const provider = new FixedProvider(new Set([11, 33]));
    const r = await checkPhones(
      ['11', '-4', '22', '33', '11', '-6'],
      normalizer,
      provider,
      new AbortController().signal,
    );
    expect([...r.outcomes]).toEqual([
      Outcome.PROHIBITED,
      Outcome.INVALID_LENGTH,
      Outcome.SAFE,
      Outcome.PROHIBITED,
      Outcome.PROHIBITED,
      Outcome.INVALID_WRONG_COUNTRY,
    ]);
    expect(r.snapshotId).toBe('s1');
    expect(provider.calls.map((c) => [...c])).toEqual([[11, 22, 33, 11]]);
  });

  it('never turns an unexpected normalizer result into safe', async () => {
    const provider = new FixedProvider(new Set());
    const r = await checkPhones(
      ['junk', '-1', '-2', '0'],
      normalizer,
      provider,
      new AbortController().signal,
    );
    expect([...r.outcomes]).toEqual([
      Outcome.INVALID_UNPARSEABLE,
      Outcome.INVALID_UNPARSEABLE,
      Outcome.INVALID_UNPARSEABLE,
      Outcome.INVALID_UNPARSEABLE,
    ]);
    expect(provider.calls.map((c) => c.length)).toEqual([0]);
  });

  it('fails as a whole when the provider fails: no partial answer', async () => {
    const failing: RegistryProvider = {
      kind: 'x',
      lookup: async () => {
        throw new ProviderError('maintenance', 'down');
      },
      state: () => ({ status: 'maintenance', snapshotId: '', registrySize: 0 }),
    };
    await expect(
      checkPhones(['11'], normalizer, failing, new AbortController().signal),
    ).rejects.toBeInstanceOf(ProviderError);
  });

  it('a provider answer other than registered (1) or not (0) fails the call: never safe, never a rejection', async () => {
    // The adapter announces that only the numbering rules make an input invalid (the gateway's v2
    // result estimate rests on it), so a valid key can only be PROHIBITED or SAFE.
    const odd: RegistryProvider = {
      kind: 'x',
      lookup: async (keys) => ({ snapshotId: 's', registered: new Uint8Array(keys.length).fill(2) }),
      state: () => ({ status: 'serving', snapshotId: 's', registrySize: 0 }),
    };
    await expect(
      checkPhones(['-4', '11'], normalizer, odd, new AbortController().signal),
    ).rejects.toBeInstanceOf(ProviderError);
  });

  it('drill latency gives up when the caller aborts', async () => {
    const drill = new DrillProvider(new FixedProvider(new Set()));
    drill.set({ latencyMs: 5_000, failure: 'none' });
    const started = Date.now();
    await expect(checkPhones(['11'], normalizer, drill, AbortSignal.timeout(50))).rejects.toBeDefined();
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});

describe('adapter configuration', () => {
  it('requires a country, and the remote provider for technical countries', () => {
    expect(adapterConfig.safeParse({}).success).toBe(false);
    expect(adapterConfig.safeParse({ COUNTRY: 'mx' }).success).toBe(true);
    expect(adapterConfig.safeParse({ COUNTRY: 'es' }).success).toBe(false);
    expect(adapterConfig.safeParse({ COUNTRY: 'es', DNC_REGISTRY_PROVIDER: 'remote' }).success).toBe(false);
    expect(
      adapterConfig.safeParse({
        COUNTRY: 'es',
        DNC_REGISTRY_PROVIDER: 'remote',
        DNC_REMOTE_REGISTRY_URL: 'https://registry.example:8443',
      }).success,
    ).toBe(true);
    // Phone numbers never go to a registry in clear text.
    expect(
      adapterConfig.safeParse({
        COUNTRY: 'es',
        DNC_REGISTRY_PROVIDER: 'remote',
        DNC_REMOTE_REGISTRY_URL: 'http://registry.example:8080',
      }).success,
    ).toBe(false);
    expect(adapterConfig.safeParse({ COUNTRY: 'us' }).success).toBe(false);
  });
});
