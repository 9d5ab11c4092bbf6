import { difference, KeyBuffer, sortDistinct, union } from '../index/registry-index.js';
import { isRegistryKey, MAX_PHONE_LENGTH, type Normalizer } from '../validation.js';
import type { RegistryStore, SnapshotInfo } from './registry-store.js';

export type LoadMode = 'replace' | 'add' | 'remove' | 'seed';

export interface LoadResult {
  snapshot: SnapshotInfo;
  linesRead: number;
  accepted: number;
  rejected: number;
}

/** A load that must not be applied; the registry is unchanged. */
export class LoadRefused extends Error {
  constructor(
    message: string,
    readonly kind: 'busy' | 'empty' | 'no_base',
  ) {
    super(message);
    this.name = 'LoadRefused';
  }
}

/** Lines a registry file may hold that are not numbers: blank lines and `#` comments. */
function isNoise(line: string): boolean {
  const t = line.trim();
  return t === '' || t.startsWith('#');
}

/**
 * Load a registry file (an async sequence of chunks of lines) into a new snapshot. Every line goes
 * through the SAME normalizer as Check, so every written form of a listed line is found later. Bad lines
 * are counted, never fatal. Memory: the keys live in Float64Arrays (8 bytes per number, plus the base
 * snapshot for add/remove), never in a JS array or Set, so 10,000,000 lines fit.
 *
 * - replace: the file becomes the whole registry (refused when not one line is a valid number, since
 *   an empty registry would answer `safe` for everyone);
 * - add / remove: a new snapshot from the current one plus / minus the file's numbers.
 */
export async function loadRegistry(
  store: RegistryStore,
  normalizer: Normalizer,
  mode: LoadMode,
  chunks: AsyncIterable<readonly string[]>,
  onProgress?: (linesRead: number) => void,
): Promise<LoadResult> {
  const result = await store.withLoadLock(async (client) => {
    const base = await store.current(client);
    // A seed only ever creates the first snapshot; another replica may have seeded already.
    if (mode === 'seed' && base) return { snapshot: base, linesRead: 0, accepted: 0, rejected: 0 };
    const buffer = new KeyBuffer();
    let linesRead = 0;
    let rejected = 0;
    let nextProgress = 1_000_000;
    for await (const chunk of chunks) {
      for (const line of chunk) {
        if (isNoise(line)) continue;
        linesRead++;
        const key = line.length > MAX_PHONE_LENGTH ? 0 : normalizer.normalize(line);
        if (isRegistryKey(key)) buffer.push(key);
        else rejected++;
      }
      if (onProgress && linesRead >= nextProgress) {
        onProgress(linesRead);
        nextProgress += 1_000_000;
      }
    }
    const accepted = linesRead - rejected;
    const fileKeys = buffer.takeSortedDistinct();
    let keys: Float64Array;
    if (mode === 'replace' || mode === 'seed') {
      if (fileKeys.length === 0) {
        throw new LoadRefused(
          'the file holds no valid number of this country; the registry is unchanged',
          'empty',
        );
      }
      keys = fileKeys;
    } else {
      if (!base)
        throw new LoadRefused('there is no registry yet: load one with --mode replace first', 'no_base');
      const baseKeys = sortDistinct(await store.readKeys(base, client));
      keys = mode === 'add' ? union(baseKeys, fileKeys) : difference(baseKeys, fileKeys);
    }
    const snapshot = await store.commitSnapshot(client, keys, { mode, linesRead, accepted, rejected }, base);
    await store.dropOldSnapshots(client, snapshot.id).catch(() => 0);
    return { snapshot, linesRead, accepted, rejected };
  });
  if (!result)
    throw new LoadRefused('another load of this registry is running; try again when it ends', 'busy');
  return result;
}
