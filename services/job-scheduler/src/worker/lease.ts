/**
 * Keeps a job's lease while an attempt runs: every `intervalMs` the work message is heartbeated and
 * the lease renewed in PostgreSQL. At most one renewal is in flight (a hung connection does not pile
 * them up), and the attempt gives up as soon as no renewal has been confirmed for a whole lease: then
 * the lease may have been taken over (the process was stopped, PostgreSQL did not answer), and nothing
 * this attempt still does may count. Elapsed time is read from the monotonic clock.
 */
export class LeaseKeeper {
  private confirmedAt: number;
  private renewing = false;
  private timer: NodeJS.Timeout | undefined;
  private lost = false;

  constructor(
    private readonly o: {
      leaseMs: number;
      intervalMs: number;
      /** When the lease was last granted (performance.now() before the claim was sent). */
      grantedAt: number;
      renew: () => Promise<{ lost: boolean }>;
      heartbeat: () => void;
      onLost: () => void;
      now?: () => number;
    },
  ) {
    this.confirmedAt = o.grantedAt;
  }

  private now(): number {
    return (this.o.now ?? performance.now.bind(performance))();
  }

  start(): void {
    this.timer = setInterval(() => this.tick(), this.o.intervalMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** True once the lease is known or presumed lost. */
  get isLost(): boolean {
    if (!this.lost && this.now() - this.confirmedAt >= this.o.leaseMs) this.loseLease();
    return this.lost;
  }

  private loseLease(): void {
    if (this.lost) return;
    this.lost = true;
    this.stop();
    this.o.onLost();
  }

  private tick(): void {
    if (this.isLost) return;
    this.o.heartbeat();
    if (this.renewing) return;
    this.renewing = true;
    const sentAt = this.now();
    this.o.renew().then(
      (r) => {
        this.renewing = false;
        if (r.lost) this.loseLease();
        else this.confirmedAt = Math.max(this.confirmedAt, sentAt);
      },
      () => {
        // PostgreSQL unreachable or slow: the next tick tries again; a whole lease without a confirmed
        // renewal ends the attempt.
        this.renewing = false;
      },
    );
  }
}
