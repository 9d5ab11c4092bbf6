import { type AdapterEntry, adapterKey, connectNats, natsNames, openBucket } from '@dnc/kit';
import { registryv1 } from '@dnc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_NATS_URL } from '../../../test/support/stack.js';
import type { RunningAdapter } from '../src/index.js';
import { createNormalizer } from '../src/index.js';
import { adapterClients, isolatedEnv, loadLines, startTestAdapter } from './support/adapter.js';

const { Outcome, LoadMode } = registryv1;

/** `count` distinct valid Mexican numbers from a start line (validated with the adapter's own normalizer). */
function mexicanLines(start: number, count: number): string[] {
  const mx = createNormalizer('mx');
  const out: string[] = [];
  for (let n = start; out.length < count; n += 7) {
    const s = `+52${n}`;
    if (mx.normalize(s) > 0) out.push(s);
  }
  return out;
}

describe('snapshot swap under continuous Check load, two replicas', () => {
  const env = isolatedEnv('adapter_swap');
  let loader: RunningAdapter;
  let replica: RunningAdapter;
  // Two disjoint registries: an answer must be wholly A (A prohibited, B safe) or wholly B.
  const A = mexicanLines(5510000000, 3000);
  const B = mexicanLines(8110000000, 3000);

  beforeAll(async () => {
    loader = await startTestAdapter(env, 'mx');
    replica = await startTestAdapter(env, 'mx');
  });
  afterAll(async () => {
    await loader?.shutdown();
    await replica?.shutdown();
    await env.drop();
  });

  it('never fails a call and never mixes two snapshots; the other replica follows within seconds', async () => {
    const first = await loadLines(loader.address, 'mx', LoadMode.REPLACE, A);
    // Before its first snapshot a replica answers unavailable (never safe); start once both serve.
    while (replica.watcher?.current?.snapshotId !== first.snapshotId)
      await new Promise((r) => setTimeout(r, 20));
    const phones = [...A.slice(0, 500), ...B.slice(0, 500)];
    const wholly = (outcomes: registryv1.Outcome[], prohibitedFirst: boolean) =>
      outcomes.every((o, i) => (i < 500 === prohibitedFirst ? o === Outcome.PROHIBITED : o === Outcome.SAFE));
    let calls = 0;
    const failures: string[] = [];
    const seen = new Map<string, 'A' | 'B'>();
    let stop = false;
    const generator = async (address: string) => {
      const { adapter } = adapterClients(address);
      while (!stop) {
        try {
          const r = await adapter.check({ country: 'mx', phones }, { timeoutMs: 5_000 });
          calls++;
          const which = wholly(r.outcomes, true) ? 'A' : wholly(r.outcomes, false) ? 'B' : undefined;
          if (!which) failures.push(`mixed answer from snapshot ${r.snapshotId}`);
          else if (seen.has(r.snapshotId) && seen.get(r.snapshotId) !== which)
            failures.push(`snapshot ${r.snapshotId} answered as both`);
          else seen.set(r.snapshotId, which);
        } catch (error) {
          failures.push(`call failed: ${(error as Error).message}`);
        }
      }
    };
    const load = Promise.all([
      generator(loader.address),
      generator(replica.address),
      generator(replica.address),
    ]);
    const pickup: number[] = [];
    for (let round = 0; round < 6; round++) {
      const res = await loadLines(loader.address, 'mx', LoadMode.REPLACE, round % 2 === 0 ? B : A);
      const committed = Date.now();
      while (replica.watcher?.current?.snapshotId !== res.snapshotId) {
        if (Date.now() - committed > 5_000)
          throw new Error('replica did not pick up the snapshot within 5 s');
        await new Promise((r) => setTimeout(r, 20));
      }
      pickup.push(Date.now() - committed);
    }
    stop = true;
    await load;
    expect(failures).toEqual([]);
    expect(calls).toBeGreaterThan(30);
    expect(seen.size).toBeGreaterThanOrEqual(4);
    expect(Math.max(...pickup)).toBeLessThan(3_000);
  });

  it('announces every replica in dnc_adapters and withdraws it on shutdown', async () => {
    const nc = await connectNats(TEST_NATS_URL, 'adapter-test');
    try {
      const kv = await openBucket(nc, natsNames(env.natsPrefix).adaptersBucket);
      const read = async (a: RunningAdapter) => {
        const e = await kv.get(adapterKey('mx', a.instanceId));
        return e && e.operation === 'PUT' ? (JSON.parse(e.string()) as AdapterEntry) : undefined;
      };
      // A changed snapshot is re-announced within the announcer's 250 ms tick.
      let entry = await read(replica);
      for (let i = 0; i < 20 && entry?.snapshot_id !== replica.watcher?.current?.snapshotId; i++) {
        await new Promise((r) => setTimeout(r, 100));
        entry = await read(replica);
      }
      expect(entry).toMatchObject({
        country: 'mx',
        address: replica.address,
        status: 'serving',
        snapshot_id: replica.watcher?.current?.snapshotId,
        registry_size: 3000,
        // Its own registry copy: lookups cost nothing, so gateways may Check early (issue 18).
        provider: 'local',
      });
      expect(Date.now() - Date.parse(entry!.updated_at)).toBeLessThan(3_000);
      expect(await read(loader)).toBeDefined();
      await replica.shutdown();
      expect(await read(replica)).toBeUndefined();
      expect(await read(loader)).toBeDefined();
    } finally {
      await nc.close();
    }
  });
});
