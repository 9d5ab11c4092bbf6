import type { SnapshotWatcher } from '../index/snapshot-watcher.js';
import { type LookupResult, ProviderError, type ProviderState, type RegistryProvider } from './provider.js';

/** The local registry copy: lookups in this replica's in-memory snapshot index. */
export class LocalProvider implements RegistryProvider {
  readonly kind = 'local';

  /**
   * `maxLagMs`: how long this replica answers from the snapshot it holds without having read the store's
   * current snapshot pointer (SnapshotWatcher.confirmedWithin); past it, nothing.
   */
  constructor(
    private readonly watcher: SnapshotWatcher,
    private readonly maxLagMs: number = Number.POSITIVE_INFINITY,
  ) {}

  async lookup(keys: Float64Array): Promise<LookupResult> {
    // ONE reference for the whole batch: a swap during this call cannot mix two snapshots.
    const index = this.watcher.current;
    if (!index) throw new ProviderError('unavailable', 'no registry snapshot loaded', 5);
    if (!this.watcher.confirmedWithin(this.maxLagMs))
      throw new ProviderError('unavailable', 'registry snapshot not confirmed current', 5);
    const registered = new Uint8Array(keys.length);
    for (let i = 0; i < keys.length; i++) registered[i] = index.has(keys[i] as number) ? 1 : 0;
    return { snapshotId: index.snapshotId, snapshotTime: index.snapshotTime, registered };
  }

  state(): ProviderState {
    const index = this.watcher.current;
    if (!index) return { status: 'unavailable', snapshotId: '', registrySize: 0 };
    return {
      status: this.watcher.confirmedWithin(this.maxLagMs) ? 'serving' : 'unavailable',
      snapshotId: index.snapshotId,
      snapshotTime: index.snapshotTime,
      registrySize: index.size,
    };
  }
}
