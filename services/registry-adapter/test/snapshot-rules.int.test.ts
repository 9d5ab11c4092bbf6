import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Code, ConnectError } from '@connectrpc/connect';
import { createPool, readPublicReason } from '@dnc/kit';
import { NUMBERING_RULES } from '@dnc/numbering';
import { registryv1 } from '@dnc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAdapter } from '../src/index.js';
import { createNormalizer } from '../src/index.js';
import { loadRegistry } from '../src/store/registry-load.js';
import { RegistryStore } from '../src/store/registry-store.js';
import { adapterClients, isolatedEnv, loadLines, startTestAdapter } from './support/adapter.js';

const { Outcome, LoadMode, AdapterStatus } = registryv1;

// Found by a review (2026-12-03): snapshots did not record the numbering rules that built their keys. A
// Check normalizes with the replica's rules; after a rules revision or a libphonenumber upgrade, a key
// built by the old rules may not be what the new rules make of the same written number (or is missing,
// for a range the old rules rejected at load), and the lookup answers `safe` for a registered number.
// A replica serves only snapshots stamped with its own rules (an unstamped one predates the stamp).
const OTHER_RULES = 'dnc-numbering/0 libphonenumber-js@0.0.0';
const OLD = ['+52 55 1234 5678', '+52 81 8123 4567'];
const NEW = ['+52 33 3123 4567', '+52 55 1234 5678'];

async function* linesOf(lines: string[]): AsyncGenerator<string[]> {
  yield lines;
}

const waitFor = async (done: () => boolean, what: string) => {
  const until = Date.now() + 5_000;
  while (!done()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
};

describe('registry snapshots carry the numbering rules that built them (mx)', () => {
  const env = isolatedEnv('adapter_rules');
  const pool = createPool(env.databaseUrl);
  const adapters: RunningAdapter[] = [];
  const start = async (extra: Record<string, string> = {}) => {
    const a = await startTestAdapter(env, 'mx', extra);
    adapters.push(a);
    return a;
  };
  const check = (a: RunningAdapter, phones: string[]) =>
    adapterClients(a.address).adapter.check({ country: 'mx', phones });
  /** A load as another release (other numbering rules) commits it, straight into the store. */
  const loadAsOtherRelease = (lines: string[]) =>
    loadRegistry(
      new RegistryStore(pool, 'mx', OTHER_RULES),
      createNormalizer('mx'),
      'replace',
      linesOf(lines),
      undefined,
      { maxRejected: 0, allowShrink: true, allowOlder: true },
    );
  const rulesOf = async (snapshotId: string) =>
    (await pool.query('SELECT numbering_rules FROM registry_mx.snapshots WHERE id = $1', [snapshotId]))
      .rows[0]?.numbering_rules;

  let serving: RunningAdapter;
  beforeAll(async () => {
    serving = await start();
  });
  afterAll(async () => {
    for (const a of adapters) await a.shutdown();
    await pool.end();
    await env.drop();
  });

  it('stamps every snapshot it commits with its rules', async () => {
    const loaded = await loadLines(serving.address, 'mx', LoadMode.REPLACE, OLD);
    expect(await rulesOf(loaded.snapshotId)).toBe(NUMBERING_RULES);
    await waitFor(() => serving.watcher?.current?.snapshotId === loaded.snapshotId, 'the first snapshot');
  });

  it('a snapshot of other rules is never served: a replica keeps its own, a new one is unavailable (never safe)', async () => {
    const own = serving.watcher!.current!.snapshotId;
    const other = await loadAsOtherRelease(NEW);
    expect(await rulesOf(other.snapshot.id)).toBe(OTHER_RULES);
    // Several polls (200 ms each) later the serving replica still answers from its own snapshot.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(serving.watcher?.refused).toBe(true);
    const kept = await check(serving, ['+52 81 8123 4567', '+52 33 3123 4567']);
    expect(kept.snapshotId).toBe(own);
    expect(kept.outcomes).toEqual([Outcome.PROHIBITED, Outcome.SAFE]);
    expect(await serving.service.metrics.metrics()).toMatch(
      /dnc_registry_snapshot_rules_mismatch\{[^}]*country="mx"[^}]*\} 1/,
    );

    const fresh = await start();
    const err = await check(fresh, ['+52 33 3123 4567']).catch((e) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect(err.code).toBe(Code.Unavailable);
    expect(readPublicReason(err)?.reason).toBe('country_service_temporarily_unavailable');
    expect((await adapterClients(fresh.address).inspect.describe({})).status).toBe(AdapterStatus.UNAVAILABLE);
  });

  it('an add or remove on it is refused, the registry unchanged; a replace brings every replica back', async () => {
    const before = (await pool.query('SELECT snapshot_id FROM registry_mx.current_snapshot')).rows[0]
      .snapshot_id;
    for (const mode of [LoadMode.ADD, LoadMode.REMOVE]) {
      const err = await loadLines(serving.address, 'mx', mode, ['+52 55 9999 0000']).catch((e) => e);
      expect(err).toBeInstanceOf(ConnectError);
      expect(err.code).toBe(Code.FailedPrecondition);
      expect(err.rawMessage).toContain('mode replace');
    }
    expect(
      (await pool.query('SELECT snapshot_id FROM registry_mx.current_snapshot')).rows[0].snapshot_id,
    ).toBe(before);

    const replaced = await loadLines(serving.address, 'mx', LoadMode.REPLACE, NEW);
    for (const a of adapters)
      await waitFor(
        () => a.watcher?.current?.snapshotId === replaced.snapshotId,
        'the replace on every replica',
      );
    expect(serving.watcher?.refused).toBe(false);
    for (const a of adapters) {
      const r = await check(a, ['+52 33 3123 4567', '+52 81 8123 4567']);
      expect(r.outcomes).toEqual([Outcome.PROHIBITED, Outcome.SAFE]);
    }
    expect(await serving.service.metrics.metrics()).toMatch(
      /dnc_registry_snapshot_rules_mismatch\{[^}]*country="mx"[^}]*\} 0/,
    );
  });

  it('an unstamped snapshot (committed before the stamp) is not served: its rules are unknown', async () => {
    // It was served as if built by this release's rules: an upgrade that brought the stamp and revision 2
    // together served every snapshot of the previous release (revision 1) without a word.
    await pool.query(
      'UPDATE registry_mx.snapshots SET numbering_rules = NULL WHERE id = (SELECT snapshot_id FROM registry_mx.current_snapshot)',
    );
    const legacy = await start();
    await waitFor(() => legacy.watcher?.refused === true, 'the unstamped snapshot refused');
    expect(legacy.watcher?.current).toBeUndefined();
    const err = await check(legacy, ['+52 33 3123 4567']).catch((e) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect(readPublicReason(err)?.reason).toBe('country_service_temporarily_unavailable');
    expect(await legacy.service.metrics.metrics()).toMatch(
      /dnc_registry_snapshot_rules_mismatch\{[^}]*country="mx"[^}]*\} 1/,
    );
  });

  // Found by a review (2026-12-04): loads were looked up among the snapshots of the process's own rules
  // only, so a release of new rules forgot every load before it: after its reload, a retried removal (its
  // answer lost before the upgrade) or last month's file re-run was applied, answering a registered
  // number safe. The runbook's reload and replay are loads made before: meant, with the flags.
  it('loads made under other rules count: the upgrade’s reload and replayed removals need the flags, a retried removal is refused', async () => {
    const own = new RegistryStore(pool, 'mx', NUMBERING_RULES);
    const other = new RegistryStore(pool, 'mx', OTHER_RULES);
    const normalizer = createNormalizer('mx');
    const x = '+52 55 7000 0003';
    const file = ['+52 55 7000 0001', '+52 55 7000 0002', x];
    const consulted = { maxRejected: 0, allowShrink: false, asOf: new Date(Date.now() - 86_400_000) };
    const load = (
      store: RegistryStore,
      mode: 'replace' | 'add' | 'remove',
      lines: string[],
      allow: { allowOlder?: boolean; allowRepeat?: boolean } = {},
    ) =>
      loadRegistry(store, normalizer, mode, linesOf(lines), undefined, {
        // A removal is dated (it must be): published the day of the consultation.
        ...(mode === 'add' ? { maxRejected: 0, allowShrink: false } : consulted),
        ...allow,
      });
    // The previous release: the consultation, a removal (its answer lost), an add of the same number.
    await load(other, 'replace', file, { allowOlder: true });
    await load(other, 'remove', [x]);
    await load(other, 'add', [x]);
    // The upgrade: the consultation's file again, then the deltas since, with the flags the refusals name.
    await expect(load(own, 'replace', file)).rejects.toThrow(/loaded before, as snapshot \d+.*--allow-older/);
    await load(own, 'replace', file, { allowOlder: true });
    await expect(load(own, 'remove', [x])).rejects.toThrow(/loaded before, as snapshot \d+.*--allow-repeat/);
    await load(own, 'remove', [x], { allowRepeat: true });
    expect((await load(own, 'add', [x])).snapshot.size).toBe(3);
    // The removal retried after the upgrade, without a flag: refused, x stays prohibited.
    await expect(load(own, 'remove', [x])).rejects.toThrow(/--allow-repeat/);
  });

  // Found reading the change once more (2026-12-04): the upgrade's reload, the file of the consultation
  // the current snapshot (of the release before) was made from, dated as that consultation, is the exact
  // retry of that snapshot's load: it was answered already_applied, nothing committed, and no replica of
  // the new rules served the country until another consultation. Also for a snapshot of the release before
  // loads were identified, once its digest is read back from its table.
  it.each([
    ['a snapshot with its load identified', false],
    ['a snapshot committed before loads were identified', true],
  ])(
    'the upgrade’s reload of the current copy’s own file is applied, not already applied (%s)',
    async (_, unidentified) => {
      const own = new RegistryStore(pool, 'mx', NUMBERING_RULES);
      const other = new RegistryStore(pool, 'mx', OTHER_RULES);
      const normalizer = createNormalizer('mx');
      const file = ['+52 55 7100 0001', '+52 55 7100 0002'];
      const guards = { maxRejected: 0, allowShrink: true, asOf: new Date(Date.now() - 3_600_000) };
      const previous = await loadRegistry(other, normalizer, 'replace', linesOf(file), undefined, {
        ...guards,
        allowOlder: true,
      });
      if (unidentified)
        await pool.query(
          'UPDATE registry_mx.snapshots SET load_digest = NULL, load_as_of = NULL WHERE id = $1',
          [previous.snapshot.id],
        );
      // Without the flag the runbook names: refused, naming it (the copy is the same numbers).
      await expect(
        loadRegistry(own, normalizer, 'replace', linesOf(file), undefined, guards),
      ).rejects.toThrow(/--allow-older/);
      const reloaded = await loadRegistry(own, normalizer, 'replace', linesOf(file), undefined, {
        ...guards,
        allowOlder: true,
      });
      expect(reloaded.alreadyApplied).toBe(false);
      expect(reloaded.snapshot.id).not.toBe(previous.snapshot.id);
      expect(await rulesOf(reloaded.snapshot.id)).toBe(NUMBERING_RULES);
      expect(reloaded.snapshot.time.getTime()).toBe(guards.asOf.getTime());
      // Under its own rules, the same load again is the exact retry it is.
      const retried = await loadRegistry(own, normalizer, 'replace', linesOf(file), undefined, guards);
      expect(retried).toMatchObject({ alreadyApplied: true, snapshot: { id: reloaded.snapshot.id } });
    },
  );

  // Found by a review (2026-12-04): across a rules upgrade a file's keys may differ (lines one revision
  // rejects and the next reads), so its digest does not find the release before's loads; a replace dated
  // before the copy of the release before was applied, dropping every number registered since.
  it('a replace dated before a copy of other rules is refused unless allow_older', async () => {
    const own = new RegistryStore(pool, 'mx', NUMBERING_RULES);
    const other = new RegistryStore(pool, 'mx', OTHER_RULES);
    const normalizer = createNormalizer('mx');
    const guards = { maxRejected: 0, allowShrink: true };
    const current = await loadRegistry(
      other,
      normalizer,
      'replace',
      linesOf(['+52 55 7200 0001', '+52 55 7200 0002']),
      undefined,
      {
        ...guards,
        asOf: new Date(Date.now() - 3_600_000),
        allowOlder: true,
      },
    );
    const lastMonth = { ...guards, asOf: new Date(Date.now() - 30 * 86_400_000) };
    await expect(
      loadRegistry(own, normalizer, 'replace', linesOf(['+52 55 7200 0001']), undefined, lastMonth),
    ).rejects.toThrow(/before the registry it applies to.*--allow-older/);
    expect((await own.current())?.id).toBe(current.snapshot.id);
  });

  it('a seed file replaces a snapshot of other rules (development stacks), and only that', async () => {
    const seedFile = join(tmpdir(), `dnc-seed-rules-${process.pid}.txt`);
    await writeFile(seedFile, '+52 81 8123 4567\n');
    const other = await loadAsOtherRelease(NEW);
    const seeded = await start({ DNC_REGISTRY_SEED_FILE: seedFile });
    await waitFor(() => seeded.watcher?.current !== undefined, 'the seeded snapshot');
    const id = seeded.watcher!.current!.snapshotId;
    expect(id).not.toBe(other.snapshot.id);
    expect(await rulesOf(id)).toBe(NUMBERING_RULES);
    expect((await check(seeded, ['+52 81 8123 4567', '+52 33 3123 4567'])).outcomes).toEqual([
      Outcome.PROHIBITED,
      Outcome.SAFE,
    ]);
    // A seed on a snapshot of its own rules changes nothing.
    const again = await start({ DNC_REGISTRY_SEED_FILE: seedFile });
    await waitFor(() => again.watcher?.current !== undefined, 'the same snapshot');
    expect(again.watcher!.current!.snapshotId).toBe(id);
  });
});
