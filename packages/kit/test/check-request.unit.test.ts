import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { BinaryReader } from '@bufbuild/protobuf/wire';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { registryv1 } from '@dnc/proto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkRequest, checkResponse, PhoneList, PhoneListWriter } from '../src/check-request.js';
// Protobuf strings decoded as every process of the platform decodes them (a leading BOM kept).
import '../src/text-decoding.js';

describe('pre-encoded CheckRequest', () => {
  it('decodes to exactly the request protobuf-es would encode: order, duplicates, unicode, empty strings', () => {
    const phones = [
      '55 1234 5678',
      '',
      '٥٥١٢٣٤٥٦٧٨',
      '55 1234 5678',
      'x'.repeat(64),
      '＋52 55 1234 5678',
      'tel:+52',
    ];
    const bytes = toBinary(registryv1.CheckRequestSchema, checkRequest('mx', phones));
    const plain = toBinary(
      registryv1.CheckRequestSchema,
      create(registryv1.CheckRequestSchema, { country: 'mx', phones }),
    );
    expect(Buffer.from(bytes).equals(Buffer.from(plain))).toBe(true);
    const decoded = fromBinary(registryv1.CheckRequestSchema, bytes);
    expect(decoded.country).toBe('mx');
    expect(decoded.phones).toEqual(phones);
  });

  it('handles a single input and none', () => {
    expect(
      fromBinary(
        registryv1.CheckRequestSchema,
        toBinary(registryv1.CheckRequestSchema, checkRequest('co', ['1'])),
      ).phones,
    ).toEqual(['1']);
    expect(
      fromBinary(
        registryv1.CheckRequestSchema,
        toBinary(registryv1.CheckRequestSchema, checkRequest('co', [])),
      ).phones,
    ).toEqual([]);
  });

  it('long inputs get multi-byte length prefixes', () => {
    const phones = Array.from({ length: 1000 }, (_, i) => 'é'.repeat(i % 200));
    const decoded = fromBinary(
      registryv1.CheckRequestSchema,
      toBinary(registryv1.CheckRequestSchema, checkRequest('ar', phones)),
    );
    expect(decoded.phones).toEqual(phones);
  });
});

/** Any phone: ASCII, graphemes, lone surrogates (which UTF-8 writes as U+FFFD). */
const anyPhone = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 130 }),
);

describe('pre-encoded CheckRequest, any strings', () => {
  it('writes the bytes protobuf-es writes, ASCII or not', () => {
    fc.assert(
      fc.property(fc.array(anyPhone, { maxLength: 30 }), (phones) => {
        const bytes = toBinary(registryv1.CheckRequestSchema, checkRequest('co', phones));
        const plain = toBinary(
          registryv1.CheckRequestSchema,
          create(registryv1.CheckRequestSchema, { country: 'co', phones }),
        );
        expect(Buffer.from(bytes).equals(Buffer.from(plain))).toBe(true);
      }),
      { numRuns: 2_000 },
    );
  });
});

describe('pre-encoded CheckRequest as phone_list', () => {
  /** The phone_list field read back: each element a length varint and its bytes, as protobuf-es reads a string. */
  const listOf = (list: Uint8Array) => {
    const reader = new BinaryReader(list);
    const phones: string[] = [];
    while (reader.pos < list.length) phones.push(reader.string());
    return phones;
  };

  it('carries the phones in one field, in order, ASCII or not', () => {
    fc.assert(
      fc.property(fc.array(anyPhone, { minLength: 1, maxLength: 30 }), (phones) => {
        const bytes = toBinary(registryv1.CheckRequestSchema, checkRequest('co', phones, 'phone_list'));
        const decoded = fromBinary(registryv1.CheckRequestSchema, bytes);
        expect(decoded.country).toBe('co');
        expect(decoded.phones).toEqual([]);
        expect(listOf(decoded.phoneList)).toEqual(phones.map((p) => Buffer.from(p, 'utf8').toString('utf8')));
      }),
      { numRuns: 2_000 },
    );
  });

  it('a phone that begins with a byte order mark keeps it (seed -810493358 found ["\\uFEFF", ""])', () => {
    const phones = ['\uFEFF', '', '\uFEFF5512345678'];
    const bytes = toBinary(registryv1.CheckRequestSchema, checkRequest('co', phones, 'phone_list'));
    expect(listOf(fromBinary(registryv1.CheckRequestSchema, bytes).phoneList)).toEqual(phones);
  });

  it('no phones: no phone_list either', () => {
    const decoded = fromBinary(
      registryv1.CheckRequestSchema,
      toBinary(registryv1.CheckRequestSchema, checkRequest('co', [], 'phone_list')),
    );
    expect(decoded.phoneList.length).toBe(0);
    expect(decoded.phones).toEqual([]);
  });
});

describe("a PhoneList written from bytes (the job worker holds phones as its input's bytes)", () => {
  /** The list written from each phone's UTF-8 bytes, as a caller without strings writes it. */
  const written = (phones: string[]) => {
    const utf8 = phones.map((p) => Buffer.from(p, 'utf8'));
    const writer = new PhoneListWriter(utf8.reduce((n, b) => n + PhoneListWriter.recordSize(b.length), 0));
    for (const b of utf8) writer.add(b, 0, b.length);
    return writer.finish();
  };
  const encoded = (phones: readonly string[] | PhoneList, form: 'phones' | 'phone_list') =>
    Buffer.from(toBinary(registryv1.CheckRequestSchema, checkRequest('co', phones, form)));

  it('is sent as the same request as the phones it holds, in either form', () => {
    fc.assert(
      fc.property(fc.array(anyPhone, { maxLength: 30 }), (phones) => {
        const list = written(phones);
        expect(list.count).toBe(phones.length);
        expect(encoded(list, 'phone_list').equals(encoded(phones, 'phone_list'))).toBe(true);
        expect(encoded(list, 'phones').equals(encoded(phones, 'phones'))).toBe(true);
      }),
      { numRuns: 2_000 },
    );
  });

  it('refuses a list that is not the size or the count it claims', () => {
    const writer = new PhoneListWriter(5);
    writer.add(Buffer.from('abc'), 0, 3);
    expect(() => writer.finish()).toThrow('size');
    expect(() => writer.add(Buffer.from('abc'), 0, 3)).toThrow('outgrew');
    const list = written(['12', '345']);
    expect(() => new PhoneList(3, list.bytes).tagged()).toThrow('cut short');
    expect(() => new PhoneList(1, list.bytes).tagged()).toThrow('more than its count');
  });
});

describe('pre-encoded CheckResponse', () => {
  it('decodes to the outcomes, in order, with the snapshot identity and time', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 8 }), { maxLength: 300 }), (values) => {
        const outcomes = Uint8Array.from(values);
        const snapshotTime = timestampFromDate(new Date('2026-01-02T03:04:05Z'));
        const bytes = toBinary(
          registryv1.CheckResponseSchema,
          checkResponse({ outcomes, snapshotId: 's1', snapshotTime }),
        );
        const decoded = fromBinary(registryv1.CheckResponseSchema, bytes);
        expect(decoded.outcomes).toEqual(values);
        expect(decoded.snapshotId).toBe('s1');
        expect(decoded.snapshotTime).toEqual(snapshotTime);
        // The same bytes protobuf-es writes itself (the field's position aside).
        const plain = fromBinary(
          registryv1.CheckResponseSchema,
          toBinary(
            registryv1.CheckResponseSchema,
            create(registryv1.CheckResponseSchema, { outcomes: values, snapshotId: 's1', snapshotTime }),
          ),
        );
        expect(decoded.outcomes).toEqual(plain.outcomes);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses an outcome that would not fit one byte', () => {
    expect(() => checkResponse({ outcomes: Uint8Array.from([1, 200]), snapshotId: 's' })).toThrow();
  });
});
