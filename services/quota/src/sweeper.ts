import type { Logger } from '@dnc/kit';
import { quotav1 } from '@dnc/proto';
import type { Ledger } from './store/ledger.js';

/**
 * v1 reservations live for one synchronous request (15 s budget). One still open after the TTL was
 * left by a caller that died between Reserve and Commit/Release; releasing it gives the quota back.
 * Job reservations are not touched: the job-scheduler settles them.
 */
export class ReservationSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;

  constructor(
    private readonly ledger: Ledger,
    private readonly logger: Logger,
    private readonly ttlSeconds: number,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.sweepOnce(), this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  /** Release every stale v1 reservation; returns how many were released. */
  sweepOnce(): Promise<number> {
    if (this.running) return this.running;
    this.running = (async () => {
      let released = 0;
      // A reservation whose release fails is passed over until the next sweep: the oldest first, it would
      // otherwise stop every sweep before the others, and their customers' quota stayed reserved for good.
      const failed: string[] = [];
      try {
        for (;;) {
          const ids = await this.ledger.staleReservations(
            quotav1.UsageKind.SYNC,
            this.ttlSeconds,
            100,
            failed,
          );
          for (const id of ids) {
            try {
              await this.ledger.release(id);
              released++;
            } catch (error) {
              failed.push(id);
              this.logger.warn({ err: error }, 'stale v1 reservation not released; retrying next interval');
            }
          }
          if (ids.length < 100) break;
        }
        if (released > 0) this.logger.warn({ released }, 'released stale v1 reservations');
      } catch (error) {
        this.logger.warn({ err: error }, 'reservation sweep failed; retrying next interval');
      } finally {
        this.running = undefined;
      }
      return released;
    })();
    return this.running;
  }
}
