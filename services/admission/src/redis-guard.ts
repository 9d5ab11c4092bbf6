/**
 * How long the limiter waits for Redis, and how it stops asking a Redis that does not answer. A rate
 * check is worth at most REDIS_CALL_BOUND_MS of a request; after a failure Redis is skipped (the
 * limiter counts per process) and asked again by one request at a time after a pause that doubles
 * from RETRY_MIN_MS to RETRY_MAX_MS, so a hung Redis costs one bounded wait per pause, not one per
 * request.
 */
export const REDIS_CALL_BOUND_MS = 500;
/** The most a Redis call may take when this process's own loop delayed it (see `run`). */
export const REDIS_CALL_CAP_MS = 2_000;
/** A timer this much late means the loop was held by other work. */
const LOOP_HELD_MS = 50;
export const RETRY_MIN_MS = 500;
export const RETRY_MAX_MS = 5_000;

export class RedisUnavailable extends Error {
  constructor(reason: string) {
    super(`rate limiter: Redis ${reason}`);
    this.name = 'RedisUnavailable';
  }
}

export class RedisGuard {
  private failures = 0;
  private retryAt = 0;
  private probing = false;

  constructor(private readonly now: () => number = Date.now) {}

  /** Run one Redis call within the bound, or fail at once while Redis is skipped. */
  async run<T>(call: () => Promise<T>): Promise<T> {
    let probe = false;
    if (this.failures > 0) {
      if (this.probing || this.now() < this.retryAt) throw new RedisUnavailable('skipped after a failure');
      probe = true;
      this.probing = true;
    }
    let timer: NodeJS.Timeout | undefined;
    try {
      const bound = new Promise<never>((_, reject) => {
        // The bound counts time the loop could have read an answer in. A timer that fires late was
        // held by other work in this process (a burst of requests), and the command itself may have
        // left only as that work ended (commands go out as a pipeline on the next tick): that is a
        // busy process, not a hung Redis, so Redis gets the time the loop took from it, up to
        // REDIS_CALL_CAP_MS in all. Taking it for a hung Redis traded the shared exact limit for
        // per-process counts (a burst of 200 across two replicas with limit 60 let 76 through).
        const started = performance.now();
        let deadline = started + REDIS_CALL_BOUND_MS;
        const expire = () => {
          const now = performance.now();
          const late = now - deadline;
          if (late > LOOP_HELD_MS && now - started < REDIS_CALL_CAP_MS) {
            deadline = now + Math.min(REDIS_CALL_BOUND_MS, late, started + REDIS_CALL_CAP_MS - now);
            timer = setTimeout(expire, deadline - now);
          } else reject(new RedisUnavailable('timed out'));
        };
        timer = setTimeout(expire, REDIS_CALL_BOUND_MS);
      });
      const result = await Promise.race([call(), bound]);
      this.failures = 0;
      return result;
    } catch (error) {
      this.failures++;
      this.retryAt = this.now() + Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** (this.failures - 1));
      throw error;
    } finally {
      clearTimeout(timer);
      if (probe) this.probing = false;
    }
  }
}
