/**
 * The in-memory registry of one snapshot: the registry keys (positive integers below 2^53) sorted
 * ascending and distinct in a Float64Array, looked up by binary search. 10,000,000 keys take 80 MB; a
 * JS Set of the same numbers would take several times that.
 *
 * A RegistryIndex is immutable once built. A Check takes one reference to the current index at its
 * start, so every outcome of one answer comes from the same snapshot.
 */
export class RegistryIndex {
  private constructor(
    readonly snapshotId: string,
    readonly snapshotTime: Date,
    readonly keys: Float64Array,
  ) {}

  /** `keys` must be sorted ascending and distinct (see `sortDistinct`); it is not copied. */
  static fromSorted(snapshotId: string, snapshotTime: Date, keys: Float64Array): RegistryIndex {
    return new RegistryIndex(snapshotId, snapshotTime, keys);
  }

  get size(): number {
    return this.keys.length;
  }

  has(key: number): boolean {
    const keys = this.keys;
    let lo = 0;
    let hi = keys.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const k = keys[mid] as number;
      if (k < key) lo = mid + 1;
      else if (k > key) hi = mid - 1;
      else return true;
    }
    return false;
  }
}
