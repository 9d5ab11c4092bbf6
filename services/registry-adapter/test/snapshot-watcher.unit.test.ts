import type { Logger } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SnapshotWatcher } from '../src/index/snapshot-watcher.js';
import { LocalProvider } from '../src/providers/local-provider.js';
import { ProviderError } from '../src/providers/provider.js';
import type { RegistryStore, SnapshotInfo } from '../src/store/registry-store.js';

const RULES = 'test-rules';
const T0 = new Date('2026-12-05T00:00:00Z').getTime();

/** A store whose pointer the test moves, and whose reads of a snapshot's keys settle when the test says. */
class FakeStore {
  readonly rules = RULES;
  pointer: string | undefined;
  private readonly reads = new Map<string, { promise: Promise<Float64Array>; settle: () => void }>();

  async current(): Promise<SnapshotInfo | undefined> {
    const id = this.pointer;
    return id === undefined ? undefined : { id, time: new Date(T0), size: 1, rules: RULES };
  }

  isOwn(snapshot: SnapshotInfo): boolean {
    return snapshot.rules === this.rules;
  }

  readKeys(snapshot: SnapshotInfo): Promise<Float64Array> {
    return this.read(snapshot.id).promise;
  }

  /** Let the read of snapshot `id` finish (it hangs until then). */
  settle(id: string): void {
    this.read(id).settle();
  }

  private read(id: string) {
    let read = this.reads.get(id);
    if (!read) {
      let settle!: () => void;
      const promise = new Promise<Float64Array>((resolve) => {
        settle = () => resolve(Float64Array.of(Number(id)));
      });
      read = { promise, settle };
      this.reads.set(id, read);
    }
    return read;
  }
}

const silent = { info() {}, warn() {}, error() {} } as unknown as Logger;
const POLL_MS = 100;
const MAX_BEHIND_MS = 1_000;

describe('SnapshotWatcher: how long a replica serves a snapshot that is not the current one', () => {
  let store: FakeStore;
  let watcher: SnapshotWatcher;
  let provider: LocalProvider;

  beforeEach(async () => {
    vi.useFakeTimers({ now: T0 });
    store = new FakeStore();
    store.pointer = '1';
    store.settle('1');
    watcher = new SnapshotWatcher(store as unknown as RegistryStore, silent, POLL_MS, MAX_BEHIND_MS);
    provider = new LocalProvider(watcher, 60_000);
    await watcher.start();
    expect(watcher.current?.snapshotId).toBe('1');
  });
  afterEach(() => {
    watcher.stop();
    vi.useRealTimers();
  });

  /** Move the fake clock to `ms` after T0, running the polls due meanwhile. */
  const at = (ms: number) => vi.advanceTimersByTimeAsync(T0 + ms - Date.now());
  const answers = () =>
    provider.lookup(Float64Array.of(1)).then(
      () => 'answers',
      (error: unknown) => (error instanceof ProviderError ? error.errorClass : String(error)),
    );

  // Found by a review (2026-12-05): each poll during a read refreshed the confirmation and dropped which
  // snapshot the pointer named, and the end of a read cleared the behind clock even when the pointer had
  // moved on meanwhile. With loads coming faster than a read, the replica never counted as behind.
  it('a read that ends on a snapshot no longer current does not restart the behind clock', async () => {
    store.pointer = '2';
    void watcher.refresh();
    await at(50);
    store.pointer = '3';
    await at(900);
    store.settle('2');
    await at(1_050);
    expect(watcher.current?.snapshotId).toBe('2');
    // Snapshot 3 has been current since t=100 (first seen then), its read under way: still within the bound.
    expect(watcher.confirmedWithin(60_000)).toBe(true);
    expect(await answers()).toBe('answers');
    await at(1_200);
    expect(watcher.confirmedWithin(60_000)).toBe(false);
    expect(await answers()).toBe('unavailable');
    expect(provider.state().status).toBe('unavailable');
    // Serving the snapshot the pointer names clears it.
    store.settle('3');
    await at(1_300);
    expect(watcher.current?.snapshotId).toBe('3');
    expect(watcher.confirmedWithin(60_000)).toBe(true);
    expect(await answers()).toBe('answers');
  });

  it('loads coming faster than a read: behind once a current snapshot has gone unserved past the bound', async () => {
    // A new snapshot every 300 ms, each read taking 800 ms: the replica is always one read or more behind.
    for (let t = 0, id = 2; t <= 3_000; t += 300, id++) {
      store.pointer = String(id);
      if (t > 0) store.settle(String(id - 3));
      await at(t + 299);
    }
    expect(watcher.confirmedWithin(60_000)).toBe(false);
    expect(await answers()).toBe('unavailable');
  });

  it('a replica that keeps up is never behind', async () => {
    for (let t = 0, id = 2; t <= 3_000; t += 300, id++) {
      store.pointer = String(id);
      store.settle(String(id));
      await at(t + 299);
      expect(watcher.current?.snapshotId).toBe(String(id));
      expect(await answers()).toBe('answers');
    }
  });
});
