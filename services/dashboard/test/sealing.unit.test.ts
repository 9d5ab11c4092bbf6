import { describe, expect, it } from 'vitest';
import { SealingKeys, Unopenable } from '../src/domain/sealing.js';

// The sealing of TOTP seeds at rest: AES-256-GCM, key id beside the value, bound to the member id.
const key = (fill: number) => Buffer.alloc(32, fill).toString('base64');
const ring = SealingKeys.parse(`a:${key(1)},b:${key(2)}`, 'b');
const SEED = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP';

describe('SealingKeys', () => {
  it('seals under the active key with a fresh nonce each time, and opens for the same member only', () => {
    const one = ring.seal(SEED, 'member-1');
    const two = ring.seal(SEED, 'member-1');
    expect(one.keyId).toBe('b');
    expect(one.sealed.equals(two.sealed)).toBe(false);
    expect(one.sealed.includes(Buffer.from(SEED))).toBe(false);
    expect(one.sealed).toHaveLength(12 + SEED.length + 16);
    expect(ring.open(one, 'member-1')).toBe(SEED);
    expect(() => ring.open(one, 'member-2')).toThrow(Unopenable);
  });

  it('opens values of a non-active key it holds (rotation); a missing or wrong key fails', () => {
    const old = SealingKeys.parse(`a:${key(1)}`, 'a').seal(SEED, 'm');
    expect(ring.open(old, 'm')).toBe(SEED);
    expect(() => SealingKeys.parse(`b:${key(2)}`, 'b').open(old, 'm')).toThrow(Unopenable);
    expect(() => SealingKeys.parse(`a:${key(7)}`, 'a').open(old, 'm')).toThrow(Unopenable);
  });

  it('any changed, cut or relabelled byte fails to open', () => {
    const v = ring.seal(SEED, 'm');
    for (const i of [0, 12, v.sealed.length - 1]) {
      const bad = Buffer.from(v.sealed);
      bad[i]! ^= 1;
      expect(() => ring.open({ ...v, sealed: bad }, 'm')).toThrow(Unopenable);
    }
    expect(() => ring.open({ ...v, sealed: v.sealed.subarray(0, 27) }, 'm')).toThrow(Unopenable);
    expect(() => ring.open({ ...v, sealed: v.sealed.subarray(0, v.sealed.length - 1) }, 'm')).toThrow(
      Unopenable,
    );
    expect(() => ring.open({ keyId: 'a', sealed: v.sealed }, 'm')).toThrow(Unopenable);
  });

  it('parse refuses a malformed ring; its errors name no key', () => {
    const bad = [
      [`a:${Buffer.alloc(31).toString('base64')}`, 'a', /key a must be 32 bytes/],
      [`a:${key(1)},a:${key(2)}`, 'a', /appears twice/],
      [`a:${key(1)}`, 'b', /active key id/],
      [key(1), 'a', /id:base64/],
      [`a b:${key(1)}`, 'a b', /id:base64/],
    ] as const;
    for (const [spec, active, message] of bad) {
      let error: unknown;
      try {
        SealingKeys.parse(spec, active);
      } catch (e) {
        error = e;
      }
      expect(String(error)).toMatch(message);
      expect(String(error)).not.toContain(key(1).slice(0, 10));
    }
    expect(SealingKeys.parse(` a : ${key(1)} `, 'a').has('a')).toBe(true);
  });
});
