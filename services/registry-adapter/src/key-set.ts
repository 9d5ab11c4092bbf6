// Sets of registry keys as sorted, distinct Float64Arrays: what the in-memory index searches
// (index/registry-index.ts) and what a load computes the next snapshot with (store/registry-load.ts).

/** Sort ascending in place and drop duplicates; returns a view of the distinct prefix. */
export function sortDistinct(keys: Float64Array): Float64Array {
  if (keys.length < 2) return keys;
  if (!isSortedDistinct(keys)) keys.sort();
  let w = 1;
  for (let r = 1; r < keys.length; r++) {
    if (keys[r] !== keys[w - 1]) keys[w++] = keys[r] as number;
  }
  return w === keys.length ? keys : keys.subarray(0, w);
}

export function isSortedDistinct(keys: Float64Array): boolean {
  for (let i = 1; i < keys.length; i++) if ((keys[i] as number) <= (keys[i - 1] as number)) return false;
  return true;
}

/** Keys of `base` plus keys of `extra` (both sorted distinct). */
export function union(base: Float64Array, extra: Float64Array): Float64Array {
  const out = new Float64Array(base.length + extra.length);
  let i = 0;
  let j = 0;
  let w = 0;
  while (i < base.length && j < extra.length) {
    const a = base[i] as number;
    const b = extra[j] as number;
    if (a < b) {
      out[w++] = a;
      i++;
    } else if (b < a) {
      out[w++] = b;
      j++;
    } else {
      out[w++] = a;
      i++;
      j++;
    }
  }
  while (i < base.length) out[w++] = base[i++] as number;
  while (j < extra.length) out[w++] = extra[j++] as number;
  return out.subarray(0, w);
}

/** Keys of `base` without the keys of `removed` (both sorted distinct). */
export function difference(base: Float64Array, removed: Float64Array): Float64Array {
  const out = new Float64Array(base.length);
  let j = 0;
  let w = 0;
  for (let i = 0; i < base.length; i++) {
    const a = base[i] as number;
    while (j < removed.length && (removed[j] as number) < a) j++;
    if (j < removed.length && removed[j] === a) continue;
    out[w++] = a;
  }
  return out.subarray(0, w);
}

/** A growable Float64Array: collects keys of a load without a JS array of numbers. */
export class KeyBuffer {
  private buf = new Float64Array(1 << 16);
  private n = 0;

  push(key: number): void {
    if (this.n === this.buf.length) {
      const next = new Float64Array(this.buf.length * 2);
      next.set(this.buf);
      this.buf = next;
    }
    this.buf[this.n++] = key;
  }

  get length(): number {
    return this.n;
  }

  /** The collected keys, sorted and distinct (the buffer is consumed). */
  takeSortedDistinct(): Float64Array {
    const keys = sortDistinct(this.buf.subarray(0, this.n));
    this.buf = new Float64Array(0);
    this.n = 0;
    return keys;
  }
}
