import type { SnapshotWatcher } from '../index/snapshot-watcher.js';
import { type LookupResult, ProviderError, type ProviderState, type RegistryProvider } from './provider.js';

/** The local registry copy: lookups in this replica's in-memory snapshot index. */
export class LocalProvider implements RegistryProvider {
  readonly kind = 'local';

  constructor(private readonly watcher: SnapshotWatcher) {}

  async lookup(keys: Float64Array): Promise<LookupResult> {
    // ONE reference for the whole batch: a swap during this call cannot mix two snapshots.
    const index = this.watcher.current;
    if (!index) throw new ProviderError('unavailable', 'no registry snapshot loaded', 5);
    const registered = new Uint8Array(keys.length);
    for (let i = 0; i < keys.length; i++) registered[i] = index.has(keys[i] as number) ? 1 : 0;
    return { snapshotId: index.snapshotId, snapshotTime: index.snapshotTime, registered };
  }

  state(): ProviderState {
    const index = this.watcher.current;
    if (!index) return { status: 'unavailable', snapshotId: '', registrySize: 0 };
    return {
      status: 'serving',
      snapshotId: index.snapshotId,
      snapshotTime: index.snapshotTime,
      registrySize: index.size,
    };
  }
}
