import type { Logger, Pool } from '@dnc/kit';

/**
 * When each API key last authenticated a request, for the dashboard's key list. Authentication only
 * notes the key id in memory (no write on the scrub path); a timer writes the keys noted since the last
 * flush in one UPDATE. So `last_used_at` is exact to about one flush interval, and a process killed
 * between two flushes loses at most that interval's notes.
 */
export class KeyUsage {
  private noted = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly pool: Pool,
    private readonly logger: Logger,
    private readonly intervalMs: number,
  ) {}

  /** The key authenticated a request just now. */
  note(keyId: string): void {
    this.noted.add(keyId);
  }

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.intervalMs);
    this.timer.unref();
  }

  /** Write what was noted; concurrent calls share one write. */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    if (this.noted.size === 0) return Promise.resolve();
    const keyIds = [...this.noted];
    this.noted = new Set();
    this.flushing = this.pool
      .query(
        `UPDATE admission.api_keys SET last_used_at = now()
         WHERE key_id = ANY($1::uuid[]) AND (last_used_at IS NULL OR last_used_at < now())`,
        [keyIds],
      )
      .then(() => undefined)
      .catch((err) => {
        // Best effort: the next use notes the key again.
        this.logger.warn({ err, keys: keyIds.length }, 'key last-use not written');
      })
      .finally(() => {
        this.flushing = undefined;
      });
    return this.flushing;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush(); // the one in flight, if any
    await this.flush(); // what was noted meanwhile
  }
}
