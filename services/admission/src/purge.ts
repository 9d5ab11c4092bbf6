import type { Logger } from '@dnc/kit';
import type { ClaimStore, Retention } from './store/index.js';

/**
 * Deletes idempotency records past their retention: v1 at least 7 days (spec: Idempotency 4), v2 as
 * long as the job can exist (spec: Idempotency 8, an exact retry returns the same job identity).
 */
export class IdempotencyPurge {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;

  constructor(
    private readonly claims: ClaimStore,
    private readonly logger: Logger,
    private readonly retention: Retention,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.purgeOnce(), this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  purgeOnce(): Promise<number> {
    if (this.running) return this.running;
    this.running = (async () => {
      try {
        const purged = await this.claims.purgeIdempotency(this.retention);
        if (purged > 0) this.logger.info({ purged }, 'purged expired idempotency records');
        return purged;
      } catch (error) {
        this.logger.warn({ err: error }, 'idempotency purge failed; retrying next interval');
        return 0;
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }
}
