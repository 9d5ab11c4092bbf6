import { TcpProxy, uniqueSuffix } from '@dnc/devstack';
import { createLogger, createRedis, Registry } from '@dnc/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_REDIS_URL } from '../../../test/support/stack.js';
import { RequestLimiter } from '../src/limiter.js';

// Chaos S9: while Redis hangs (connection open, no answer), every request waited for a Redis command
// timeout, twice (address block, then the window count): v1 p99 2.5 s. The limiter must degrade to
// its per-process counts at once and ask Redis again only now and then. Redis is reached through a
// TCP proxy that holds every byte for real.

let proxy: TcpProxy;
let url: string;

beforeAll(async () => {
  const target = new URL(TEST_REDIS_URL);
  proxy = await TcpProxy.start([{ host: target.hostname, port: Number(target.port || 6379) }]);
  target.host = `127.0.0.1:${proxy.port}`;
  url = target.toString();
});
afterAll(async () => {
  await proxy.close();
});

const options = {
  prefix: `T${uniqueSuffix()}_`,
  windowSeconds: 60,
  degradedDivisor: 2,
  authFailures: 10,
  authWindowSeconds: 60,
  orgFactor: 10,
  blockSeconds: 60,
};

describe('the rate limiter while Redis hangs', () => {
  it('answers every request from its local counts without waiting on Redis each time, and recovers', async () => {
    const redis = createRedis(url);
    const limiter = new RequestLimiter(redis, options, createLogger('test', 'silent'), new Registry());
    try {
      if (redis.status !== 'ready') await new Promise((r) => redis.once('ready', r));
      expect((await limiter.countRequest('org-a', 100)).kind).toBe('allowed');
      expect(limiter.isDegraded).toBe(false);

      proxy.setFault({ kind: 'hang' });
      const times: number[] = [];
      for (let i = 0; i < 20; i++) {
        const t0 = performance.now();
        await limiter.addressBlockedSeconds('10.0.0.1');
        const verdict = await limiter.countRequest('org-a', 100);
        times.push(performance.now() - t0);
        expect(verdict.kind).toBe('allowed');
      }
      expect(limiter.isDegraded).toBe(true);
      times.sort((a, b) => a - b);
      // The first request pays one bounded wait; the rest do not wait on Redis at all.
      expect(times[times.length - 1]).toBeLessThan(1_500);
      expect(times[Math.floor(times.length * 0.9) - 1]).toBeLessThan(100);

      // Redis answers again: the limiter counts in Redis again within its retry period.
      proxy.setFault({ kind: 'pass' });
      const until = Date.now() + 10_000;
      while (limiter.isDegraded && Date.now() < until) {
        await limiter.countRequest('org-a', 100);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(limiter.isDegraded).toBe(false);
    } finally {
      proxy.setFault({ kind: 'pass' });
      redis.disconnect();
    }
  });
});

describe('the rate limiter on a busy event loop', () => {
  it('keeps counting in Redis when the answer arrived in time but the loop ran the timer first', async () => {
    // A burst of requests can hold this process's event loop past the Redis bound while Redis itself
    // answered within a millisecond. The reply then waits in the socket as the timer fires: taking
    // that for a hung Redis turned the exact shared limit into per-process counts (a burst of 200
    // across two replicas with limit 60 let 76 through).
    const redis = createRedis(TEST_REDIS_URL);
    const limiter = new RequestLimiter(redis, options, createLogger('test', 'silent'), new Registry());
    try {
      if (redis.status !== 'ready') await new Promise((r) => redis.once('ready', r));
      for (let i = 0; i < 5; i++) {
        const verdict = limiter.countRequest('org-busy', 100);
        const busyUntil = performance.now() + 700; // longer than the 500 ms bound
        while (performance.now() < busyUntil) {
          // the loop held, as by a burst of work
        }
        expect((await verdict).kind).toBe('allowed');
        expect(limiter.isDegraded).toBe(false);
      }
    } finally {
      redis.disconnect();
    }
  });
});
