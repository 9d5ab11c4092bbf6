import { randomUUID } from 'node:crypto';
import type { Pool } from '@dnc/kit';

/**
 * The sweepers' turn: one replica sweeps at a time, holding a lease that lapses `leaseMs` after its last
 * renewal (by the database's clock). A replica stopped or cut off mid-tick loses the turn when its lease
 * lapses, and another takes it at its next tick; the stopped one, if it resumes, finds the turn taken at its
 * next renewal and leaves the tick. Found by a review (2026-12-04): the turn was a session advisory lock,
 * held for as long as the holder's connection lived (for ever for a frozen process, ~2 h of TCP keepalive
 * for a partitioned one), and every other replica skipped every sweep meanwhile. Two replicas sweeping at
 * once for a moment is safe (every step locks or conditions its rows); the lease keeps it rare.
 */
export class SweepLease {
  readonly holder = randomUUID();

  constructor(
    private readonly pool: Pool,
    private readonly leaseMs: number,
  ) {}

  /** When this replica last took or renewed the turn (performance.now()). */
  private renewedAt = Number.NEGATIVE_INFINITY;

  /**
   * Within a long step: true while this replica holds the turn, renewed once a sixth of the lease has passed
   * since the last renewal (a step that calls a slow dependency in turn would outlast it otherwise).
   */
  async keep(): Promise<boolean> {
    if (performance.now() - this.renewedAt < this.leaseMs / 6) return true;
    return this.hold();
  }

  /** Take the turn, or renew it: true while this replica holds it. */
  async hold(): Promise<boolean> {
    const at = performance.now();
    const r = await this.pool.query(
      `INSERT INTO jobs.sweep_lease AS l (id, holder, expires_at)
       VALUES (1, $1, clock_timestamp() + make_interval(secs => $2))
       ON CONFLICT (id) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
       WHERE l.holder = EXCLUDED.holder OR l.expires_at <= clock_timestamp()
       RETURNING 1`,
      [this.holder, this.leaseMs / 1000],
    );
    if (r.rowCount !== 1) return false;
    this.renewedAt = at;
    return true;
  }

  /** Give the turn back at the end of a tick: any replica's next tick takes it. */
  async release(): Promise<void> {
    await this.pool.query(
      'UPDATE jobs.sweep_lease SET expires_at = clock_timestamp() WHERE holder = $1 AND expires_at > clock_timestamp()',
      [this.holder],
    );
  }
}
