import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KeyRing, openSegment, sealSegment, segmentsOf } from '../src/crypto/envelope.js';

const k1 = Buffer.alloc(32, 1).toString('base64');
const k2 = Buffer.alloc(32, 2).toString('base64');
const binding = { jobId: '6f1c1d3e-0000-4000-8000-000000000001', orgId: 'org_a', kind: 'input' as const };

describe('envelope encryption (AES-256-GCM, per-blob data key wrapped by a KEK with an id)', () => {
  it('rotation: a key wrapped under the old KEK still opens once a new KEK is active', () => {
    const old = KeyRing.parse(`k1:${k1}`, 'k1');
    const { dek, kekId, wrapped } = old.newDataKey(binding);
    const rotated = KeyRing.parse(`k1:${k1},k2:${k2}`, 'k2');
    expect(rotated.unwrap(kekId, wrapped, binding).equals(dek)).toBe(true);
    expect(rotated.newDataKey(binding).kekId).toBe('k2');
  });

  it('the additional data binds job, organization, kind and position', () => {
    const ring = KeyRing.parse(`k1:${k1}`, 'k1');
    const { dek, kekId, wrapped } = ring.newDataKey(binding);
    expect(() => ring.unwrap(kekId, wrapped, { ...binding, orgId: 'org_b' })).toThrow();
    const sealed = sealSegment(dek, binding, 0, true, Buffer.from('["5512345678"]'));
    expect(sealed.includes(Buffer.from('5512345678'))).toBe(false);
    expect(openSegment(dek, binding, 0, true, sealed).toString()).toBe('["5512345678"]');
    expect(() =>
      openSegment(dek, { ...binding, jobId: binding.jobId.replace('1', '2') }, 0, true, sealed),
    ).toThrow();
    expect(() => openSegment(dek, { ...binding, kind: 'result' }, 0, true, sealed)).toThrow();
    expect(() => openSegment(dek, binding, 1, true, sealed)).toThrow();
    // A truncated blob: the segment sealed as "more" cannot pass for the last one.
    const first = sealSegment(dek, binding, 0, false, Buffer.from('['));
    expect(() => openSegment(dek, binding, 0, true, first)).toThrow();
  });

  it('refuses a bad key ring: wrong length, unknown active id', () => {
    expect(() => KeyRing.parse('k1:AAAA', 'k1')).toThrow(/32 bytes/);
    expect(() => KeyRing.parse(`k1:${k1}`, 'k9')).toThrow(/ACTIVE/);
  });

  it('segments reassemble byte for byte, including multibyte characters cut across segments', () => {
    const phones = Array.from({ length: 1000 }, (_, i) => `٥٥ ${i} ＋52`);
    const whole = JSON.stringify(phones);
    // The input arrives as string pieces of any length; segments are cut by UTF-8 bytes.
    const pieces = whole.match(/[\s\S]{1,37}/g)!;
    const parts = [...segmentsOf(pieces, 1000)];
    expect(parts.length).toBeGreaterThan(5);
    expect(parts.every((p) => p.length <= 1000)).toBe(true);
    expect(Buffer.concat(parts).toString('utf8')).toBe(whole);
    expect([...segmentsOf([''], 10)]).toHaveLength(1);
  });

  it('segments of any pieces: every segment full but the last, the bytes in order', () => {
    const piece = fc.oneof(
      fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)),
      fc.string({ maxLength: 30 }),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 30 }), fc.integer({ min: 1, max: 64 }), (pieces, size) => {
        const whole = Buffer.concat(pieces.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p)));
        const parts = [...segmentsOf(pieces, size)];
        expect(Buffer.concat(parts).equals(whole)).toBe(true);
        expect(parts.length).toBe(Math.max(1, Math.ceil(whole.length / size)));
        expect(parts.slice(0, -1).every((p) => p.length === size)).toBe(true);
      }),
    );
  });

  it('a submitted input (one buffer) is cut into views of it, not copies', () => {
    const input = Buffer.alloc(5 * 1000 + 7, 0x31);
    const parts = [...segmentsOf([input], 1000)];
    expect(parts.map((p) => p.length)).toEqual([1000, 1000, 1000, 1000, 1000, 7]);
    expect(parts.every((p) => p.buffer === input.buffer)).toBe(true);
    expect(parts.map((p) => p.byteOffset - input.byteOffset)).toEqual([0, 1000, 2000, 3000, 4000, 5000]);
  });
});
