import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { getTextEncoding } from '@bufbuild/protobuf/wire';
import { registryv1 } from '@dnc/proto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkRequest } from '../src/index.js';

// The kit's protobuf string decoding (text-decoding.ts) must give exactly TextDecoder's strings, a
// leading byte order mark kept (a string field's bytes are the string: "\uFEFF1" is not "1").

const reference = new TextDecoder('utf-8', { ignoreBOM: true });

describe('protobuf string decoding with the short-ASCII path', () => {
  it('is the one protobuf-es uses once the kit is loaded', () => {
    const bytes = new TextEncoder().encode('+573001234567');
    expect(getTextEncoding().decodeUtf8(bytes)).toBe('+573001234567');
    // A TextDecoder would have been a native call; the configured decoder is the kit's.
    expect(getTextEncoding().decodeUtf8.toString()).toContain('fromCharCode');
  });

  it('decodes any byte sequence exactly as TextDecoder does (invalid UTF-8 included, a BOM kept)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), (bytes) => {
        expect(getTextEncoding().decodeUtf8(bytes)).toBe(reference.decode(bytes));
      }),
      { numRuns: 5_000 },
    );
    for (const bytes of [[], [0xef, 0xbb, 0xbf, 0x31], [0x00, 0x7f], [0xc3], [0xed, 0xa0, 0x80]])
      expect(getTextEncoding().decodeUtf8(Uint8Array.from(bytes))).toBe(
        reference.decode(Uint8Array.from(bytes)),
      );
  });

  it('a Check request of any strings decodes to the strings sent', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'grapheme', maxLength: 70 }), { maxLength: 30 }), (phones) => {
        const decoded = fromBinary(
          registryv1.CheckRequestSchema,
          toBinary(registryv1.CheckRequestSchema, checkRequest('co', phones)),
        );
        expect(decoded.phones).toEqual(phones);
      }),
      { numRuns: 1_000 },
    );
  });

  it('keeps a leading byte order mark, as the string it was encoded from', () => {
    const bytes = new TextEncoder().encode('\uFEFF5512345678');
    expect(getTextEncoding().decodeUtf8(bytes)).toBe('\uFEFF5512345678');
    expect(getTextEncoding().decodeUtf8(bytes, true)).toBe('\uFEFF5512345678');
    const long = `\uFEFF${'5'.repeat(80)}`;
    expect(getTextEncoding().decodeUtf8(new TextEncoder().encode(long))).toBe(long);
    const decoded = fromBinary(
      registryv1.CheckRequestSchema,
      toBinary(registryv1.CheckRequestSchema, checkRequest('mx', ['\uFEFF5512345678', '\uFEFF'])),
    );
    expect(decoded.phones).toEqual(['\uFEFF5512345678', '\uFEFF']);
  });

  it('strict decoding still refuses invalid UTF-8', () => {
    expect(() => getTextEncoding().decodeUtf8(Uint8Array.from([0xc3]), true)).toThrow();
  });
});
