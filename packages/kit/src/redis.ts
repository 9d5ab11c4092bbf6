import { Redis } from 'ioredis';

export type { Redis };

/**
 * Redis for short-lived counters. Commands fail fast while disconnected (no offline queue), so a
 * Redis outage degrades the caller at once instead of queueing requests behind it.
 */
export function createRedis(url: string): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    commandTimeout: 1_000,
    lazyConnect: false,
    retryStrategy: (times) => Math.min(100 * 2 ** Math.min(times, 5), 2_000),
  });
  // Connection errors are observed through health probes and the degraded-mode metric.
  redis.on('error', () => {});
  return redis;
}

export async function probeRedis(redis: Redis): Promise<boolean> {
  return (await redis.ping()) === 'PONG';
}
