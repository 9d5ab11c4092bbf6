import type { Logger } from 'pino';
import { sortDistinct } from '../key-set.js';
import type { RegistryStore, SnapshotInfo } from '../store/registry-store.js';
import { RegistryIndex } from './registry-index.js';

/**
 * Keeps this replica's in-memory index on the store's current snapshot: it polls the pointer every
 * `pollMs` and, when it moved, reads the new snapshot into a fresh index and swaps ONE reference. A
 * Check holding the previous index finishes on it; the next Check sees the new one. Until the first
 * snapshot is read `current` is undefined and the adapter answers nothing (never `safe`).
 *
 * A snapshot built with other numbering rules (`RegistryStore.isOwn`) is never swapped in: its keys may not
 * be what this replica's rules make of the same written numbers. The replica keeps the index it has (none:
 * unavailable), reports the refusal (`refused`, the dnc_registry_snapshot_rules_mismatch gauge) and logs it
 * once per snapshot, until a snapshot of its own rules is loaded.
 */
export class SnapshotWatcher {
  private index: RegistryIndex | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private failures = 0;
  private refusedId: string | undefined;
  /** When the store's current snapshot pointer was last read (ms; 0: never). */
  private confirmedAt = 0;
  /**
   * The snapshots the pointer named, in order, since it last named the one served, each with when it was
   * first seen: the first one's time is since when this replica is behind (empty: it is not).
   */
  private unserved: { id: string; since: number }[] = [];
  /** Pointer reads issued, and the latest one whose answer was taken (an earlier one answering late is not). */
  private pointerReads = 0;
  private pointerTaken = 0;

  /**
   * `maxBehindMs`: how long this replica answers from the snapshot it holds once the store's current one is
   * another (being read, refused for its rules, or failing to read); past it, nothing.
   */
  constructor(
    private readonly store: RegistryStore,
    private readonly logger: Logger,
    private readonly pollMs: number,
    private readonly maxBehindMs = Number.POSITIVE_INFINITY,
  ) {}

  get current(): RegistryIndex | undefined {
    return this.index;
  }

  /**
   * Whether this replica read the store's current snapshot pointer within `maxLagMs`: one that cannot
   * (its database connection lost) cannot know whether a newer snapshot was loaded, and must not keep
   * answering from the one it holds (numbers registered since would be answered `safe`, for as long as
   * that snapshot is within its maximum age). Found by a review (2026-12-03).
   */
  confirmedWithin(maxLagMs: number, now = Date.now()): boolean {
    // Reading the pointer is not enough when it names another snapshot than the one served: a replica
    // whose read of it keeps failing, or that refuses it (other numbering rules), answered from its old
    // snapshot for as long as that was within its maximum age, the numbers registered since answered
    // `safe`. Found by a review (2026-12-04). A read in progress is given `maxBehindMs` (a large registry
    // takes minutes), then the replica stops answering until it serves the current snapshot.
    // The clock starts when the pointer first named a snapshot this replica does not serve, and only
    // serving the one it names stops it: a read that ends on a snapshot the pointer has moved on from
    // restarted it, so with loads coming faster than a read the replica never counted as behind, and the
    // numbers registered in the newer snapshots were answered `safe` (found by a review, 2026-12-05).
    const behindSince = this.unserved[0]?.since;
    if (behindSince !== undefined && now - behindSince > this.maxBehindMs) return false;
    return now - this.confirmedAt <= maxLagMs;
  }

  /** Whether the store's current snapshot was built with other numbering rules and is not served. */
  get refused(): boolean {
    return this.refusedId !== undefined;
  }

  async start(): Promise<void> {
    await this.refresh().catch((error) => this.logger.warn({ err: error }, 'registry snapshot not read yet'));
    this.timer = setInterval(() => {
      // While a snapshot is read (a large registry: minutes), the pointer is still read on each poll: the
      // replica stays confirmed as long as it reaches the store, serving the index it has until the swap,
      // and a snapshot loaded meanwhile is known from when it was first seen.
      if (this.running) {
        void this.readPointer().catch(() => {});
        return;
      }
      void this.refresh().catch((error) => {
        // Logged once per streak; the previous index keeps serving meanwhile.
        if (this.failures++ === 0) this.logger.warn({ err: error }, 'registry snapshot refresh failed');
      });
    }, this.pollMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Look at the pointer now (also called right after a local load); concurrent calls share one run. */
  refresh(): Promise<void> {
    if (!this.running) {
      this.running = this.load().finally(() => {
        this.running = undefined;
      });
    }
    return this.running;
  }

  /**
   * Read the pointer and note what it names: confirmed now; behind from when it first named a snapshot
   * other than the one served, until it names that one again. An answer older than one already taken (a
   * slow read) is not taken: it could name the served snapshot after the pointer moved on.
   */
  private async readPointer(): Promise<SnapshotInfo | undefined> {
    const read = ++this.pointerReads;
    const snapshot = await this.store.current();
    if (read < this.pointerTaken) return snapshot;
    this.pointerTaken = read;
    this.confirmedAt = Date.now();
    if (!snapshot || snapshot.id === this.index?.snapshotId) this.unserved = [];
    else if (this.unserved.at(-1)?.id !== snapshot.id)
      this.unserved.push({ id: snapshot.id, since: this.confirmedAt });
    return snapshot;
  }

  /** The index now serves `snapshotId`: behind only from the snapshots the pointer named after it. */
  private served(snapshotId: string): void {
    const last = this.unserved.map((u) => u.id).lastIndexOf(snapshotId);
    this.unserved = this.unserved.slice(last + 1);
  }

  private async load(): Promise<void> {
    const snapshot = await this.readPointer();
    if (!snapshot || snapshot.id === this.index?.snapshotId) {
      this.failures = 0;
      this.refusedId = undefined;
      return;
    }
    if (!this.store.isOwn(snapshot)) {
      this.failures = 0;
      this.refuse(snapshot.id, snapshot.rules);
      return;
    }
    const started = Date.now();
    const keys = sortDistinct(await this.store.readKeys(snapshot));
    const next = RegistryIndex.fromSorted(snapshot.id, snapshot.time, keys);
    this.index = next;
    this.served(next.snapshotId);
    this.failures = 0;
    this.refusedId = undefined;
    this.logger.info(
      { snapshot_id: next.snapshotId, registry_size: next.size, ms: Date.now() - started },
      'registry snapshot swapped in',
    );
  }

  private refuse(snapshotId: string, rules: string | null): void {
    if (this.refusedId === snapshotId) return;
    this.refusedId = snapshotId;
    this.logger.error(
      {
        snapshot_id: snapshotId,
        snapshot_rules: rules,
        rules: this.store.rules,
        serving_snapshot_id: this.index?.snapshotId ?? null,
      },
      'registry snapshot built with other numbering rules: not served; load the whole registry (mode replace)',
    );
  }
}
