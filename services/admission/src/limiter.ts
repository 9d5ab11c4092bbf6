import { createHash } from 'node:crypto';
import { Gauge, type Logger, type Redis, type Registry } from '@dnc/kit';
import {
  abuseThreshold,
  decideRate,
  degradedLimit,
  type RateDecision,
  windowOf,
} from './domain/rate-window.js';
import { RedisGuard } from './redis-guard.js';

export interface LimiterOptions {
  prefix: string;
  windowSeconds: number;
  degradedDivisor: number;
  authFailures: number;
  authWindowSeconds: number;
  orgFactor: number;
  blockSeconds: number;
}

export type OrgVerdict =
  | { kind: 'allowed'; rate: RateDecision }
  | { kind: 'limited'; rate: RateDecision }
  | { kind: 'blocked'; rate: RateDecision; retryAfterSeconds: number };

/**
 * One round trip per authenticated request: abuse block check, window count, block on abuse.
 * KEYS[1] window counter, KEYS[2] org block. ARGV: counter TTL, abuse threshold, block seconds.
 * Returns {count, blockMs}: blockMs > 0 means blocked (count not incremented while blocked).
 */
const ORG_SCRIPT = `
local blocked = redis.call('PTTL', KEYS[2])
if blocked > 0 then return {0, blocked} end
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
if n > tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], '1', 'EX', ARGV[3])
  return {n, tonumber(ARGV[3]) * 1000}
end
return {n, 0}
`;

/** KEYS[1] failure counter, KEYS[2] address block. ARGV: window seconds, threshold, block seconds. */
const FAILURE_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
if n >= tonumber(ARGV[2]) then redis.call('SET', KEYS[2], '1', 'EX', ARGV[3]) end
return n
`;

const shas = new Map<string, string>();
function scriptSha(script: string): string {
  let sha = shas.get(script);
  if (!sha) {
    sha = createHash('sha1').update(script).digest('hex');
    shas.set(script, sha);
  }
  return sha;
}

/** Fixed-window counters of this process alone: the fallback while Redis is unreachable. */
class LocalCounters {
  private readonly counts = new Map<string, { start: number; n: number }>();
  private readonly blocks = new Map<string, number>();

  incr(key: string, windowStart: number): number {
    const cur = this.counts.get(key);
    const n = cur && cur.start === windowStart ? cur.n + 1 : 1;
    this.counts.set(key, { start: windowStart, n });
    if (this.counts.size > 100_000) {
      for (const [k, v] of this.counts) if (v.start < windowStart) this.counts.delete(k);
    }
    return n;
  }

  blockedMs(key: string, nowMs: number): number {
    const until = this.blocks.get(key);
    if (until === undefined) return 0;
    if (until <= nowMs) {
      this.blocks.delete(key);
      return 0;
    }
    return until - nowMs;
  }

  block(key: string, untilMs: number): void {
    this.blocks.set(key, untilMs);
  }
}

/**
 * The technical rate limit and the abuse guard, counted atomically in Redis and shared by every
 * replica. When Redis fails or does not answer within its bound (redis-guard.ts), the limiter degrades
 * to a conservative per-process limit (never an outage, never unlimited, never a wait per request) and
 * `dnc_rate_limiter_degraded` says so until Redis answers again.
 */
/** Addresses remembered as blocked (seenBlocked); the oldest are forgotten first past this many. */
const SEEN_BLOCKED_MAX = 10_000;

export class RequestLimiter {
  private readonly local = new LocalCounters();
  /** Addresses this process saw blocked, until when (ms): see seenBlocked. */
  private readonly blockedSeen = new Map<string, number>();
  private readonly guard: RedisGuard;
  private readonly degradedGauge: Gauge;
  private degraded = false;

  constructor(
    private readonly redis: Redis,
    private readonly options: LimiterOptions,
    private readonly logger: Logger,
    metrics: Registry,
    private readonly now: () => number = Date.now,
  ) {
    this.degradedGauge = new Gauge({
      name: 'dnc_rate_limiter_degraded',
      help: '1 while Redis is unreachable and rate limits are counted per process.',
      registers: [metrics],
    });
    this.degradedGauge.set(0);
    this.guard = new RedisGuard(now);
  }

  get isDegraded(): boolean {
    return this.degraded;
  }

  private setDegraded(on: boolean, error?: unknown): void {
    if (on === this.degraded) return;
    this.degraded = on;
    this.degradedGauge.set(on ? 1 : 0);
    if (on)
      this.logger.warn({ err: error }, 'rate limiter degraded: Redis unreachable, counting per process');
    else this.logger.info('rate limiter recovered: counting in Redis again');
  }

  /**
   * A two-key script by its SHA-1 (EVALSHA), its text sent only when Redis does not know it yet (after
   * a restart): the scripts run on every request.
   */
  private async evalScript(script: string, ...args: (string | number)[]): Promise<unknown> {
    const sha = scriptSha(script);
    return this.guard.run(async () => {
      try {
        return await this.redis.evalsha(sha, 2, ...args);
      } catch (error) {
        if (!String((error as Error).message).startsWith('NOSCRIPT')) throw error;
        return this.redis.eval(script, 2, ...args);
      }
    });
  }

  private key(...parts: string[]): string {
    return `${this.options.prefix}dnc:${parts.join(':')}`;
  }

  /** Seconds the address is still blocked for (0: not blocked). */
  async addressBlockedSeconds(address: string): Promise<number> {
    if (!address) return 0;
    const key = this.key('block', 'addr', address);
    let ms: number;
    try {
      ms = await this.guard.run(() => this.redis.pttl(key));
      this.setDegraded(false);
    } catch (error) {
      this.setDegraded(true, error);
      ms = this.local.blockedMs(key, this.now());
    }
    if (ms > 0) this.noteBlocked(address, this.now() + ms);
    return ms > 0 ? Math.ceil(ms / 1000) : 0;
  }

  /**
   * Whether this process saw the address blocked and the block may still run: its requests then check
   * the block before anything else is done for them (authentication.ts). Another replica's block, or
   * one set since, is found by addressBlockedSeconds as before.
   */
  seenBlocked(address: string): boolean {
    const until = this.blockedSeen.get(address);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.blockedSeen.delete(address);
    return false;
  }

  private noteBlocked(address: string, untilMs: number): void {
    this.blockedSeen.delete(address);
    this.blockedSeen.set(address, untilMs);
    if (this.blockedSeen.size > SEEN_BLOCKED_MAX)
      this.blockedSeen.delete(this.blockedSeen.keys().next().value as string);
  }

  /** Count a failed authentication from an address; enough of them block the address. */
  async recordAuthFailure(address: string): Promise<void> {
    if (!address) return;
    const o = this.options;
    const nowMs = this.now();
    const w = windowOf(nowMs, o.authWindowSeconds);
    const counter = this.key('authfail', address, String(w.start));
    const block = this.key('block', 'addr', address);
    let failures: number;
    try {
      failures = Number(
        await this.evalScript(
          FAILURE_SCRIPT,
          counter,
          block,
          o.authWindowSeconds,
          o.authFailures,
          o.blockSeconds,
        ),
      );
      this.setDegraded(false);
    } catch (error) {
      this.setDegraded(true, error);
      failures = this.local.incr(counter, w.start);
      if (failures >= o.authFailures) this.local.block(block, nowMs + o.blockSeconds * 1000);
    }
    if (failures >= o.authFailures) this.noteBlocked(address, nowMs + o.blockSeconds * 1000);
  }

  /** Count one authenticated request of an organization in its technical window. */
  async countRequest(orgId: string, limit: number): Promise<OrgVerdict> {
    const o = this.options;
    const nowMs = this.now();
    const w = windowOf(nowMs, o.windowSeconds);
    const counter = this.key('rl', orgId, String(w.start));
    const block = this.key('block', 'org', orgId);
    let count: number;
    let blockMs: number;
    let effectiveLimit = limit;
    try {
      const r = (await this.evalScript(
        ORG_SCRIPT,
        counter,
        block,
        o.windowSeconds + 5,
        abuseThreshold(limit, o.orgFactor),
        o.blockSeconds,
      )) as [number, number];
      [count, blockMs] = r;
      this.setDegraded(false);
    } catch (error) {
      this.setDegraded(true, error);
      effectiveLimit = degradedLimit(limit, o.degradedDivisor);
      blockMs = this.local.blockedMs(block, nowMs);
      count = blockMs > 0 ? 0 : this.local.incr(counter, w.start);
      if (blockMs === 0 && count > abuseThreshold(effectiveLimit, o.orgFactor)) {
        blockMs = o.blockSeconds * 1000;
        this.local.block(block, nowMs + blockMs);
      }
    }
    const rate = decideRate(blockMs > 0 ? Math.max(count, effectiveLimit + 1) : count, effectiveLimit, w);
    if (blockMs > 0)
      return { kind: 'blocked', rate, retryAfterSeconds: Math.max(1, Math.ceil(blockMs / 1000)) };
    return { kind: rate.allowed ? 'allowed' : 'limited', rate };
  }
}
