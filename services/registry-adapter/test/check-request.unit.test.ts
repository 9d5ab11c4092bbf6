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
    if (m.phoneList.length === 0) return { country: m.country, phones: m.phones };
    if (m.phones.length > 0) return { error: 'a Check request sets phones or phone_list, not both' };
    return { country: m.country, phones: referenceList(m.phoneList) };
  } catch (error) {
    // What Connect answers for a request protobuf-es cannot decode (createBinarySerialization).
    return { error: `parse binary: ${(error as Error).message}` };
  }
}

/** `phone_list` read element by element: each as protobuf-es decodes a one-phone `phones` record. */
function referenceList(list: Uint8Array): string[] {
  const reader = new BinaryReader(list);
  const phones: string[] = [];
  while (reader.pos < list.length) {
    const length = reader.uint32();
    if (reader.pos + length > list.length) throw new Error('premature EOF');
    const bytes = list.subarray(reader.pos, reader.pos + length);
    reader.pos += length;
    const record = Uint8Array.from([0x12, ...varint(length), ...bytes]);
    phones.push(fromBinary(registryv1.CheckRequestSchema, record).phones[0]!);
  }
  return phones;
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
    // The real CheckRequest's fields are strings and bytes, read as a length and bytes whatever the wire type.
    if (no === 1 || no === 2 || no === 3) reader.bytes();
    else reader.skip(wireType, no);
  }
  return false;
}

/** Up to 40 phones of any strings: non-ASCII, empty, long. */
const anyPhones = (minLength: number) =>
  fc.array(fc.oneof(fc.string({ unit: 'grapheme', maxLength: 70 }), fc.string({ maxLength: 200 })), {
    minLength,
    maxLength: 40,
  });

/** Up to 12 phones of any bytes (valid UTF-8 or not), or of printable ASCII. */
const rawPhones = (minLength: number) =>
  fc.array(fc.oneof(fc.uint8Array({ maxLength: 20 }), fc.uint8Array({ min: 0x20, max: 0x7e })), {
    minLength,
    maxLength: 12,
  });

describe('CheckRequest as the adapter reads it', () => {
  it('gives the strings protobuf-es gives, for any strings (non-ASCII, empty, long)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 4 }), anyPhones(0), (country, phones) => {
        for (const message of [
          create(registryv1.CheckRequestSchema, { country, phones }),
          checkRequest(country, phones),
        ]) {
          const bytes = toBinary(registryv1.CheckRequestSchema, message);
          const mine = adapter(bytes);
          expect(mine).toEqual(reference(bytes));
          expect(mine).toEqual({ country, phones });
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('refuses exactly the invalid UTF-8 protobuf-es refuses, with the same error', () => {
    fc.assert(
      fc.property(rawPhones(0), fc.nat(12), (phones, countryAt) => {
        const bytes = rawRequest('co', phones, countryAt);
        expect(adapter(bytes)).toEqual(reference(bytes));
      }),
      { numRuns: 5_000 },
    );
    // Overlong, surrogate, truncated and out-of-range sequences; a leading BOM (the platform's decoder
    // keeps it at the field's start, kit text-decoding.ts: the adapter reads the same string).
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

  // Found by a review (2026-12-03): an empty `phone_list` record (field 3, length 0: valid protobuf that
  // another encoder may write) between `phones` records was read as a phone, shifting every later input
  // onto the outcome of the one before it (a registered number could be answered with its neighbour's
  // `safe`).
  it('an empty phone_list record anywhere among the phones records changes nothing', () => {
    fc.assert(
      fc.property(rawPhones(1), fc.array(fc.nat(12), { minLength: 1, maxLength: 4 }), (phones, at) => {
        const records = phones.map((p) => [0x12, ...varint(p.length), ...p]);
        for (const i of at) records.splice(Math.min(i, records.length), 0, [0x1a, 0x00]);
        records.unshift([0x0a, 0x02, 0x63, 0x6f]);
        const bytes = Uint8Array.from(records.flat());
        expect(adapter(bytes)).toEqual(reference(bytes));
      }),
      { numRuns: 5_000 },
    );
    const bytes = Uint8Array.from([
      0x0a, 0x02, 0x6d, 0x78, 0x12, 0x01, 0x31, 0x1a, 0x00, 0x12, 0x01, 0x32, 0x12, 0x01, 0x33,
    ]);
    expect(adapter(bytes)).toEqual({ country: 'mx', phones: ['1', '2', '3'] });
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

// `phone_list` (registry_adapter.proto): the phones as one field, each its length varint and bytes.
describe('CheckRequest with phone_list', () => {
  /** A request with `phone_list` written by hand: each phone's bytes as given (valid UTF-8 or not). */
  function listRequest(country: string, phones: Uint8Array[]): Uint8Array {
    const list = Uint8Array.from(phones.flatMap((p) => [...varint(p.length), ...p]));
    return toBinary(
      registryv1.CheckRequestSchema,
      create(registryv1.CheckRequestSchema, { country, phoneList: list }),
    );
  }

  it('gives the phones the phones records give, for any strings (non-ASCII, empty, long)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 4 }), anyPhones(1), (country, phones) => {
        const bytes = toBinary(registryv1.CheckRequestSchema, checkRequest(country, phones, 'phone_list'));
        // One field of phones: no phones records on the wire.
        expect(fromBinary(registryv1.CheckRequestSchema, bytes).phones).toEqual([]);
        expect(adapter(bytes)).toEqual({ country, phones });
      }),
      { numRuns: 2_000 },
    );
  });

  it('refuses the invalid UTF-8 the phones records refuse, with the same error', () => {
    fc.assert(
      fc.property(rawPhones(1), (phones) => {
        const list = adapter(listRequest('co', phones));
        const records = adapter(rawRequest('co', phones));
        expect(list).toEqual(records);
      }),
      { numRuns: 5_000 },
    );
  });

  it('refuses a list whose last length runs past its end, or whose varint is cut short', () => {
    const list = (bytes: number[]) =>
      adapter(
        toBinary(
          registryv1.CheckRequestSchema,
          create(registryv1.CheckRequestSchema, { country: 'co', phoneList: Uint8Array.from(bytes) }),
        ),
      );
    expect(list([3, 0x31, 0x32, 0x33])).toEqual({ country: 'co', phones: ['123'] });
    expect(list([3, 0x31, 0x32, 0x33, 4, 0x31])).toEqual({ error: 'parse binary: premature EOF' });
    expect(list([3, 0x31, 0x32, 0x33, 0x80])).toHaveProperty('error');
    expect(list([0, 0])).toEqual({ country: 'co', phones: ['', ''] });
  });

  it('refuses a request that sets both phones and phone_list', () => {
    const both = Uint8Array.from([
      ...rawRequest('co', [Uint8Array.from([0x31])]),
      ...toBinary(
        registryv1.CheckRequestSchema,
        create(registryv1.CheckRequestSchema, { phoneList: Uint8Array.from([1, 0x32]) }),
      ),
    ]);
    expect(adapter(both)).toEqual({ error: 'a Check request sets phones or phone_list, not both' });
    const json = fromJson(CheckRequestWireSchema, {
      country: 'co',
      phones: ['1'],
      phoneList: Buffer.from([1, 0x32]).toString('base64'),
    }) as unknown as CheckRequestWire;
    expect(() => checkPhonesOf(json, true)).toThrow('not both');
  });

  it('reads a JSON request that sends phone_list (base64)', () => {
    const m = fromJson(CheckRequestWireSchema, {
      country: 'co',
      phoneList: Buffer.from([2, 0x31, 0x32, 0, 1, 0x33]).toString('base64'),
    }) as unknown as CheckRequestWire;
    expect(checkPhonesOf(m, true)).toEqual(['12', '', '3']);
  });
});
