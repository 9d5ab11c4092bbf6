/**
 * Memory admission for request bodies. A body is admitted against a budget before it is read: its
 * cost is its declared size times the heap a body takes while it is handled (the buffered bytes, its
 * string, the parsed arrays, the canonical copy). A body that does not fit waits in line, then is
 * refused; one organization may not hold more than half the budget unless it holds nothing (so one
 * key cannot keep the others' large bodies out). Small bodies are not counted: they never wait.
 */
export class BodyBudget {
  private available: number;
  private readonly held = new Map<string, number>();
  private readonly waiting: Waiter[] = [];

  constructor(readonly capacity: number) {
    this.available = capacity;
  }

  /** Resolves with a release function, or undefined when no room came within `waitMs`. */
  acquire(owner: string, cost: number, waitMs: number): Promise<(() => void) | undefined> {
    return new Promise((resolve) => {
      const waiter: Waiter = { owner, cost: Math.min(cost, this.capacity), resolve, timer: undefined };
      this.waiting.push(waiter);
      this.grant();
      if (!this.waiting.includes(waiter)) return;
      waiter.timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        resolve(undefined);
        this.grant();
      }, waitMs);
    });
  }

  get inUse(): number {
    return this.capacity - this.available;
  }

  get queued(): number {
    return this.waiting.length;
  }

  private fits(owner: string, cost: number): boolean {
    const mine = this.held.get(owner) ?? 0;
    return cost <= this.available && (mine === 0 || mine + cost <= this.capacity / 2);
  }

  private take(owner: string, cost: number): () => void {
    this.available -= cost;
    this.held.set(owner, (this.held.get(owner) ?? 0) + cost);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.available += cost;
      const left = (this.held.get(owner) ?? 0) - cost;
      if (left > 0) this.held.set(owner, left);
      else this.held.delete(owner);
      this.grant();
    };
  }

  /** Admit waiters in arrival order; one held back by its organization's share lets later ones pass. */
  private grant(): void {
    for (let i = 0; i < this.waiting.length; ) {
      const w = this.waiting[i]!;
      if (w.cost > this.available) break;
      if (!this.fits(w.owner, w.cost)) {
        i++;
        continue;
      }
      this.waiting.splice(i, 1);
      clearTimeout(w.timer);
      w.resolve(this.take(w.owner, w.cost));
    }
  }
}

interface Waiter {
  owner: string;
  cost: number;
  resolve: (release: (() => void) | undefined) => void;
  timer: NodeJS.Timeout | undefined;
}

/**
 * True when the JSON text nests deeper than `max` (objects and arrays; brackets inside strings do
 * not count). One pass over the bytes, stopping at the first level too deep: a hostile body costs a
 * scan, not the recursive parse that stalls the event loop for seconds. A body with no more than
 * `max` opening brackets in all cannot nest deeper; they are counted natively first (a scrub body has
 * two: 0.3 ms for 8 MB instead of a 10 ms scan).
 */
export function nestsDeeperThan(body: Uint8Array, max: number): boolean {
  if (openersAtMost(body, max)) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}

/** At most `max` bytes `[` and `{` in the whole body, strings included. */
function openersAtMost(body: Uint8Array, max: number): boolean {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  let count = 0;
  for (const opener of [0x5b, 0x7b]) {
    for (let i = bytes.indexOf(opener); i !== -1; i = bytes.indexOf(opener, i + 1)) {
      if (++count > max) return false;
    }
  }
  return true;
}
