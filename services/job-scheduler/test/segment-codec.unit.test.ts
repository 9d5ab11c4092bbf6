import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SEGMENT_BYTES } from '../src/crypto/envelope.js';
import { frameSegment, unframeSegment } from '../src/crypto/segment-codec.js';

// A segment is framed (compressed when smaller) and unframed back to its bytes, whatever its size: the
// codec's output arrives in one chunk of the segment's size, never below zlib's minimum chunk.
function phones(bytes: number): Buffer {
  let s = '[';
  for (let i = 0; s.length < bytes; i++) s += `"+5730${String(10_000_000 + ((i * 7919) % 89_999_999))}",`;
  return Buffer.from(s.slice(0, bytes));
}

describe('segment codec', () => {
  it.each([1, 63, 64, 65, 4_096, 16_385, 300_000, SEGMENT_BYTES])(
    'a list of numbers of %i bytes reads back byte for byte',
    async (size) => {
      const plain = phones(size);
      const framed = await frameSegment(plain);
      expect(framed.length).toBeLessThanOrEqual(plain.length + 1);
      expect((await unframeSegment(framed, SEGMENT_BYTES)).equals(plain)).toBe(true);
    },
  );

  it('a short segment read back holds its own bytes, not a chunk of the segment size', async () => {
    const plain = phones(4_096);
    const out = await unframeSegment(await frameSegment(plain), SEGMENT_BYTES);
    expect(out.equals(plain)).toBe(true);
    expect(out.buffer.byteLength).toBeLessThan(2 * plain.length);
  });

  it('a full segment of random bytes is stored as it is and reads back', async () => {
    const plain = randomBytes(SEGMENT_BYTES);
    const framed = await frameSegment(plain);
    expect(framed.length).toBe(plain.length + 1);
    expect((await unframeSegment(framed, SEGMENT_BYTES)).equals(plain)).toBe(true);
  });

  it('a segment that would decompress past the segment size is refused', async () => {
    const framed = await frameSegment(phones(SEGMENT_BYTES));
    await expect(unframeSegment(framed, SEGMENT_BYTES - 1)).rejects.toThrow();
  });
});
