import { Redis } from 'ioredis';

export type { Redis };

/**
 * Redis for short-lived counters. Commands fail fast while disconnected (no offline queue), so a
 * Redis outage degrades the caller at once instead of queueing requests behind it. Commands issued in
 * the same tick of the event loop go out as one pipeline (one write, one read for a whole batch of
 * admissions).
 */
export function createRedis(url: string): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    commandTimeout: 1_000,
    lazyConnect: false,
    enableAutoPipelining: true,
    retryStrategy: (times) => Math.min(100 * 2 ** Math.min(times, 5), 2_000),
  });
  // Connection errors are observed through health probes and the degraded-mode metric.
  redis.on('error', () => {});
  return redis;
}
