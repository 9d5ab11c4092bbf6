import { uniqueSuffix } from '@dnc/devstack';
import { createLogger, createRedis, type Redis, Registry, readPublicReason } from '@dnc/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_REDIS_URL } from '../../../test/support/stack.js';
import { authenticateKey } from '../src/authentication.js';
import { generateApiKey } from '../src/domain/api-key.js';
import { RequestLimiter } from '../src/limiter.js';
import { Refusals } from '../src/public-errors.js';
import type { KeyCredential } from '../src/store/index.js';

// Steps 0 and 1 of the check order (address block, then the key) with the key's lookup sent beside
// the address block's (issue 18: one round trip fewer per request). The answers stay those of the
// sequential order, and an address seen blocked looks no key up at all. Real Redis; the lookup is the
// caller's function (Admit's reads the key and the gate facts), here one that counts its calls.

let redis: Redis;
const options = {
  prefix: `T${uniqueSuffix()}_`,
  windowSeconds: 60,
  degradedDivisor: 2,
  authFailures: 3,
  authWindowSeconds: 60,
  orgFactor: 10,
  blockSeconds: 60,
};

beforeAll(async () => {
  redis = createRedis(TEST_REDIS_URL);
  // Connected before the first test. The client queues nothing offline: a first command sent before
  // the connection is up fails, the limiter counts per process for a pause, and when the machine is
  // slow the pause ends midway through a test's failures, so they are counted partly in the process
  // and partly in Redis, and never reach the threshold in either (CI of 2026-11-29).
  if (redis.status !== 'ready') await new Promise((r) => redis.once('ready', r));
});

/**
 * The limiter's clock, 30 s into a window of the counters when the test starts and running on from
 * there: failures counted in one test never straddle two windows (a window that turned between them
 * would start their count again).
 */
function midWindowClock(): () => number {
  const started = Date.now();
  const windowMs = options.authWindowSeconds * 1000;
  const mid = Math.floor(started / windowMs) * windowMs + windowMs / 2;
  return () => mid + (Date.now() - started);
}
afterAll(async () => {
  const keys = await redis.keys(`${options.prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

function setup() {
  const logger = createLogger('test', 'silent');
  const metrics = new Registry();
  const limiter = new RequestLimiter(redis, options, logger, metrics, midWindowClock());
  const deps = { limiter, refusals: new Refusals(metrics, logger), defaultRateLimit: 1_000 };
  const key = generateApiKey();
  const credential: KeyCredential = {
    keyId: '00000000-0000-4000-8000-000000000001',
    orgId: `00000000-0000-4000-8000-${uniqueSuffix().padStart(12, '0').slice(-12)}`,
    digest: key.digest,
    revoked: false,
    rateLimit: null,
  };
  const lookups: string[] = [];
  let failLookups = false;
  const lookup = async (publicId: string) => {
    lookups.push(publicId);
    await new Promise((r) => setTimeout(r, 5));
    if (failLookups) throw new Error('postgres is down');
    return publicId === key.publicId ? { credential } : undefined;
  };
  const authenticate = (apiKey: string, address: string) =>
    authenticateKey(deps, apiKey, address, lookup).then(
      () => 'ok',
      (error: unknown) => readPublicReason(error)?.reason ?? 'failed',
    );
  return {
    key,
    lookups,
    authenticate,
    failLookups: (on: boolean) => {
      failLookups = on;
    },
  };
}

describe('address block and key lookup (check order steps 0 and 1)', () => {
  it('a blocked address is answered temporarily_blocked whatever the key; once seen blocked, no lookups', async () => {
    const t = setup();
    const address = `10.77.${Math.floor(Math.random() * 250)}.1`;
    const wrong = generateApiKey().apiKey;
    expect(await t.authenticate(t.key.apiKey, address)).toBe('ok');
    for (let i = 0; i < options.authFailures; i++)
      expect(await t.authenticate(wrong, address)).toBe('invalid_key');
    const before = t.lookups.length;
    // Blocked now: a valid key and a wrong one get the same answer, and none of them is looked up.
    expect(await t.authenticate(t.key.apiKey, address)).toBe('temporarily_blocked');
    expect(await t.authenticate(wrong, address)).toBe('temporarily_blocked');
    t.failLookups(true);
    expect(await t.authenticate(t.key.apiKey, address)).toBe('temporarily_blocked');
    expect(t.lookups.length).toBe(before);
    // Another address is not affected.
    t.failLookups(false);
    expect(await t.authenticate(t.key.apiKey, '10.78.0.1')).toBe('ok');
  });

  it("another replica's block: the lookup went out beside it, but the answer is the block's", async () => {
    const t = setup();
    const address = `10.79.${Math.floor(Math.random() * 250)}.1`;
    // Blocked in Redis by someone else (another admission replica counted the failures).
    await redis.set(`${options.prefix}dnc:block:addr:${address}`, '1', 'EX', 60);
    t.failLookups(true);
    expect(await t.authenticate(t.key.apiKey, address)).toBe('temporarily_blocked');
    // From now on this process checks that address's block first, alone.
    const seen = t.lookups.length;
    expect(await t.authenticate(t.key.apiKey, address)).toBe('temporarily_blocked');
    expect(t.lookups.length).toBe(seen);
  });

  it('a lookup that fails for an address that is not blocked fails the request as before', async () => {
    const t = setup();
    t.failLookups(true);
    expect(await t.authenticate(t.key.apiKey, '10.80.0.1')).toBe('failed');
    t.failLookups(false);
    expect(await t.authenticate(t.key.apiKey, '10.80.0.1')).toBe('ok');
    expect(await t.authenticate('garbage', '10.80.0.1')).toBe('invalid_key');
  });
});
