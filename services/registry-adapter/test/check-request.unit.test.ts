import { create, fromBinary, fromJson, toBinary } from '@bufbuild/protobuf';
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';
import { checkRequest } from '@dnc/kit';
import { registryv1 } from '@dnc/proto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type CheckRequestWire, CheckRequestWireSchema, checkPhonesOf } from '../src/check-request.js';

// The adapter reads a CheckRequest with a descriptor that leaves the phones as unknown-field records
// and makes the strings itself (check-request.ts): it must give exactly protobuf-es's own decoding of
// the real CheckRequest, and refuse exactly the requests that decoding refuses.

type Decoded = { country: string; phones: string[] } | { error: string };

function reference(bytes: Uint8Array): Decoded {
  try {
    const m = fromBinary(registryv1.CheckRequestSchema, bytes);
    return { country: m.country, phones: m.phones };
  } catch (error) {
    // What Connect answers for a request protobuf-es cannot decode (createBinarySerialization).
    return { error: `parse binary: ${(error as Error).message}` };
  }
}

function adapter(bytes: Uint8Array): Decoded {
  let m: CheckRequestWire;
  try {
    m = fromBinary(CheckRequestWireSchema, bytes) as unknown as CheckRequestWire;
  } catch (error) {
    return { error: `parse binary: ${(error as Error).message}` };
  }
  try {
    return { country: m.country, phones: checkPhonesOf(m, false) };
  } catch (error) {
    return { error: (error as { rawMessage: string }).rawMessage };
  }
}

const varint = (n: number) => {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return out;
};

/** A CheckRequest written by hand: the country, then each phone's bytes as given (valid UTF-8 or not). */
function rawRequest(country: string, phones: Uint8Array[], countryAt = 0): Uint8Array {
  const records = phones.map((p) => [0x12, ...varint(p.length), ...p]);
  const c = new TextEncoder().encode(country);
  records.splice(Math.min(countryAt, records.length), 0, [0x0a, ...varint(c.length), ...c]);
  return Uint8Array.from(records.flat());
}

/** Whether a request protobuf-es decodes has a `phones` record (field 2) of a wire type other than LEN. */
function hasPhonesOfOtherWireType(bytes: Uint8Array): boolean {
  const reader = new BinaryReader(bytes);
  while (reader.pos < bytes.length) {
    const [no, wireType] = reader.tag();
    if (no === 2 && wireType !== WireType.LengthDelimited) return true;
    // The real CheckRequest's fields are strings, read as a length and bytes whatever the wire type.
    if (no === 1 || no === 2) reader.bytes();
    else reader.skip(wireType, no);
  }
  return false;
}

describe('CheckRequest as the adapter reads it', () => {
  it('gives the strings protobuf-es gives, for any strings (non-ASCII, empty, long)', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 4 }),
        fc.array(fc.oneof(fc.string({ unit: 'grapheme', maxLength: 70 }), fc.string({ maxLength: 200 })), {
          maxLength: 40,
        }),
        (country, phones) => {
          for (const message of [
            create(registryv1.CheckRequestSchema, { country, phones }),
            checkRequest(country, phones),
          ]) {
            const bytes = toBinary(registryv1.CheckRequestSchema, message);
            const mine = adapter(bytes);
            expect(mine).toEqual(reference(bytes));
            expect(mine).toEqual({ country, phones });
          }
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('refuses exactly the invalid UTF-8 protobuf-es refuses, with the same error', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.uint8Array({ maxLength: 20 }), fc.uint8Array({ min: 0x20, max: 0x7e })), {
          maxLength: 12,
        }),
        fc.nat(12),
        (phones, countryAt) => {
          const bytes = rawRequest('co', phones, countryAt);
          expect(adapter(bytes)).toEqual(reference(bytes));
        },
      ),
      { numRuns: 5_000 },
    );
    // Overlong, surrogate, truncated and out-of-range sequences; a leading BOM (protobuf-es's decoder
    // drops it from the field's start: so must the adapter).
    const cases = [
      [0xc0, 0xaf],
      [0xed, 0xa0, 0x80],
      [0xe2, 0x82],
      [0xf4, 0x90, 0x80, 0x80],
      [0xef, 0xbb, 0xbf, 0x31],
    ];
    for (const bad of cases) {
      const bytes = rawRequest('co', [Uint8Array.from([0x33]), Uint8Array.from(bad)]);
      expect(adapter(bytes)).toEqual(reference(bytes));
    }
    expect(adapter(rawRequest('co', [Uint8Array.from([0xc3])]))).toHaveProperty('error');
  });

  it('refuses broken framing as protobuf-es does', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 60 }), (bytes) => {
        const theirs = reference(bytes);
        const mine = adapter(bytes);
        if ('error' in theirs) expect(mine).toHaveProperty('error');
        // A phones record of another wire type than length-delimited: protobuf-es reads a string there
        // anyway (a length and bytes); the adapter refuses such a request.
        else if (hasPhonesOfOtherWireType(bytes)) expect(mine).toHaveProperty('error');
        else expect(mine).toEqual(theirs);
      }),
      { numRuns: 20_000 },
    );
    expect(adapter(Uint8Array.from([0x13, 0x00]))).toHaveProperty('error');
    expect(reference(Uint8Array.from([0x13, 0x00]))).toEqual({ country: '', phones: [''] });
  });

  it('reads a JSON request (Connect application/json) from its phones', () => {
    const json = { country: 'co', phones: ['+573001234567', 'ñ 300', ''] };
    const m = fromJson(CheckRequestWireSchema, json) as unknown as CheckRequestWire;
    expect(m.country).toBe('co');
    expect(checkPhonesOf(m, true)).toEqual(json.phones);
    // The same object as binary carries no phones there: it never counts for a binary request.
    expect(checkPhonesOf(m, false)).toEqual([]);
  });
});
