/**
 * The technical rate limit is a fixed window per organization aligned to the epoch (a 60-second
 * window starts at a multiple of 60 s), so every replica agrees on the window and its reset time
 * without coordination beyond one counter.
 */
// The limits themselves (default 60, 1 to 60,000 per 60-second window) are the contract's LIMITS.

export interface Window {
  /** Unix seconds the window started. */
  start: number;
  /** Unix seconds the window resets (= next window's start). */
  resetUnix: number;
}

export function windowOf(nowMs: number, windowSeconds: number): Window {
  const now = Math.floor(nowMs / 1000);
  const start = now - (now % windowSeconds);
  return { start, resetUnix: start + windowSeconds };
}

/** Seconds until the window resets, at least 1 (Retry-After is never 0). */
export function secondsToReset(nowMs: number, resetUnix: number): number {
  return Math.max(1, Math.ceil(resetUnix - nowMs / 1000));
}

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  resetUnix: number;
}

/** The request that made the window's count `count` is allowed when count <= limit. */
export function decideRate(count: number, limit: number, window: Window): RateDecision {
  return {
    allowed: count <= limit,
    limit,
    remaining: Math.max(0, limit - count),
    resetUnix: window.resetUnix,
  };
}

/**
 * Without Redis each process counts alone. It enforces a share of the organization's limit so that a
 * few replicas together stay near the real limit: conservative, never unlimited, never zero.
 */
export function degradedLimit(limit: number, divisor: number): number {
  return Math.max(1, Math.floor(limit / divisor));
}

/** An organization is blocked by the abuse guard once its window count passes limit x factor. */
export function abuseThreshold(limit: number, factor: number): number {
  return Math.max(limit + 1, Math.floor(limit * factor));
}
