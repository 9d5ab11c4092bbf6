import { ConnectError } from '@connectrpc/connect';
import { createPool, readPublicReason } from '@dnc/kit';
import { registryv1 } from '@dnc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAdapter } from '../src/index.js';
import { createNormalizer } from '../src/index.js';
import { loadRegistry } from '../src/store/registry-load.js';
import { RegistryStore } from '../src/store/registry-store.js';
import { adapterClients, isolatedEnv, loadLines, startTestAdapter } from './support/adapter.js';

const { Outcome, LoadMode } = registryv1;

// Found by a review (2026-12-04): a replica counted itself current as soon as it read the snapshot
// pointer, also when the pointer named a snapshot it did not serve: one it refused (built with other
// numbering rules, a rolling upgrade or a rollback) or one whose read kept failing (a copy timeout, a
// reset connection). It answered from its old snapshot for as long as that was within its maximum age
// (30 days), every number registered since answered `safe`, and discovery said `serving`. Past
// DNC_SNAPSHOT_MAX_BEHIND_MS behind the current snapshot a replica now answers nothing.
const OTHER_RULES = 'dnc-numbering/0 libphonenumber-js@0.0.0';
const OLD = ['+52 55 1234 5678', '+52 81 8123 4567'];
const NEW = ['+52 33 3123 4567', '+52 55 1234 5678'];
const MAX_BEHIND_MS = 1_500;

async function* linesOf(lines: string[]): AsyncGenerator<string[]> {
  yield lines;
}

describe('a replica behind the current snapshot stops answering (mx)', () => {
  const env = isolatedEnv('adapter_behind');
  const pool = createPool(env.databaseUrl);
  let adapter: RunningAdapter;

  beforeAll(async () => {
    adapter = await startTestAdapter(env, 'mx', { DNC_SNAPSHOT_MAX_BEHIND_MS: String(MAX_BEHIND_MS) });
  });
  afterAll(async () => {
    await adapter?.shutdown();
    await pool.end();
    await env.drop();
  });

  const check = () =>
    adapterClients(adapter.address)
      .adapter.check({ country: 'mx', phones: ['+52 81 8123 4567', '+52 33 3123 4567'] })
      .then(
        (answer) => answer.outcomes,
        (error: unknown) => readPublicReason(ConnectError.from(error))?.reason ?? String(error),
      );
  const status = () => adapter.provider.state().status;

  it('keeps its snapshot while behind for less than the bound, then nothing; serving again once current', async () => {
    await loadLines(adapter.address, 'mx', LoadMode.REPLACE, OLD);
    await expect.poll(check, { timeout: 5_000 }).toEqual([Outcome.PROHIBITED, Outcome.SAFE]);

    // Another release loads the registry (other rules): the pointer moves to a snapshot this replica
    // refuses; +52 33 3123 4567 is registered in it.
    await loadRegistry(
      new RegistryStore(pool, 'mx', OTHER_RULES),
      createNormalizer('mx'),
      'replace',
      linesOf(NEW),
    );
    const moved = Date.now();
    await expect.poll(() => adapter.watcher?.refused, { timeout: 5_000, interval: 50 }).toBe(true);
    expect(await check()).toEqual([Outcome.PROHIBITED, Outcome.SAFE]);
    await expect
      .poll(check, { timeout: 10_000, interval: 100 })
      .toBe('country_service_temporarily_unavailable');
    expect(Date.now() - moved).toBeGreaterThanOrEqual(MAX_BEHIND_MS - 250);
    expect(status()).toBe('unavailable');

    // A replace of its own rules: current again, the new registry served.
    await loadLines(adapter.address, 'mx', LoadMode.REPLACE, NEW);
    await expect.poll(check, { timeout: 5_000, interval: 100 }).toEqual([Outcome.SAFE, Outcome.PROHIBITED]);
    expect(status()).toBe('serving');
  });
});
