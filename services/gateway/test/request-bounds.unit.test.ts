import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BodyBudget, nestsDeeperThan } from '../src/body-budget.js';
import { fingerprint } from '../src/fingerprint.js';

// Issue 15, the gateway's own bounds: the pure parts (the memory budget, the nesting scan, the
// fingerprint without a second copy of the body). The end-to-end proof is gateway-bounds.e2e.test.ts.

describe('BodyBudget', () => {
  it('admits what fits at once and keeps the rest waiting, in order', async () => {
    const b = new BodyBudget(100);
    const first = await b.acquire('a', 60, 1_000);
    expect(first).toBeTypeOf('function');
    const second = b.acquire('b', 60, 1_000);
    expect(b.queued).toBe(1);
    first!();
    expect(await second).toBeTypeOf('function');
    expect(b.inUse).toBe(60);
  });

  it('refuses after the wait when no room comes (the 503)', async () => {
    const b = new BodyBudget(100);
    await b.acquire('a', 100, 0);
    const t0 = Date.now();
    expect(await b.acquire('b', 10, 50)).toBeUndefined();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(45);
    expect(b.queued).toBe(0);
  });

  it('lets one organization hold at most half unless it holds nothing; others pass its queued bodies', async () => {
    const b = new BodyBudget(100);
    const a1 = await b.acquire('a', 40, 0);
    expect(a1).toBeTypeOf('function');
    // A second body of `a` would take it past half: it waits, and `b` is admitted past it.
    const a2 = b.acquire('a', 40, 200);
    const b1 = await b.acquire('b', 40, 200);
    expect(b1).toBeTypeOf('function');
    expect(await a2).toBeUndefined();
    // A body larger than half the budget is admitted when its organization holds nothing.
    const big = await b.acquire('c', 0, 0);
    expect(big).toBeTypeOf('function');
  });

  it('counts a body larger than the whole budget as the whole budget', async () => {
    const b = new BodyBudget(100);
    const r = await b.acquire('a', 10_000, 0);
    expect(r).toBeTypeOf('function');
    expect(b.inUse).toBe(100);
    r!();
    r!();
    expect(b.inUse).toBe(0);
  });
});

describe('nestsDeeperThan', () => {
  const buf = (s: string) => Buffer.from(s);
  it('counts objects and arrays, at the limit and one past it', () => {
    expect(nestsDeeperThan(buf('{"phones":["1"]}'), 2)).toBe(false);
    expect(nestsDeeperThan(buf(`${'['.repeat(16)}${']'.repeat(16)}`), 16)).toBe(false);
    expect(nestsDeeperThan(buf(`${'['.repeat(17)}${']'.repeat(17)}`), 16)).toBe(true);
  });
  it('ignores brackets inside strings, escaped quotes included', () => {
    expect(nestsDeeperThan(buf(`{"a":"${'['.repeat(100)}\\"${'{'.repeat(100)}"}`), 2)).toBe(false);
  });
  it('answers as a scan of every byte would, whatever the text (the bracket count is only a shortcut)', () => {
    const scan = (body: Uint8Array, max: number) => {
      let depth = 0;
      let inString = false;
      for (let i = 0; i < body.length; i++) {
        const c = body[i];
        if (inString) {
          if (c === 0x5c) i++;
          else if (c === 0x22) inString = false;
        } else if (c === 0x22) inString = true;
        else if (c === 0x5b || c === 0x7b) {
          if (++depth > max) return true;
        } else if (c === 0x5d || c === 0x7d) depth--;
      }
      return false;
    };
    const text = fc.string({ unit: fc.constantFrom('[', ']', '{', '}', '"', '\\', 'a', ','), maxLength: 60 });
    fc.assert(
      fc.property(text, fc.integer({ min: 0, max: 8 }), (t, max) => {
        expect(nestsDeeperThan(buf(t), max)).toBe(scan(buf(t), max));
      }),
      { numRuns: 20_000 },
    );
  });
  it('stops at the first level too deep (a 25 MiB body of brackets is a short scan)', () => {
    const deep = Buffer.alloc(26_214_400, '[');
    const t0 = performance.now();
    expect(nestsDeeperThan(deep, 16)).toBe(true);
    expect(performance.now() - t0).toBeLessThan(50);
  });
});

describe('fingerprint', () => {
  const old = (country: string, phones: string[]) =>
    `v1:${createHmac('sha256', 's'.repeat(16))
      .update(JSON.stringify([country, phones]))
      .digest('hex')}`;
  it('is the HMAC of the same JSON text as before, for any number of pieces', () => {
    for (const n of [0, 1, 1_999, 2_000, 2_001, 4_500]) {
      const phones = Array.from({ length: n }, (_, i) =>
        i % 7 === 0 ? `"q\\${i}\u00e9\uD800` : `+57 300 ${i}`,
      );
      expect(fingerprint('s'.repeat(16), 'v1', 'co', phones)).toBe(old('co', phones));
      // v2 hashes its durable input (JSON.stringify(phones) in UTF-8) directly: the same fingerprint.
      const canonical = Buffer.from(JSON.stringify(phones), 'utf8');
      expect(fingerprint('s'.repeat(16), 'v1', 'co', phones, canonical)).toBe(old('co', phones));
    }
  });
});
