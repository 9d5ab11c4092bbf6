import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { registryv1 } from '@dnc/proto';
import { describe, expect, it } from 'vitest';
import { checkRequest } from '../src/check-request.js';

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
    const plain = toBinary(registryv1.CheckRequestSchema, {
      $typeName: 'dnc.registry.v1.CheckRequest',
      country: 'mx',
      phones,
    });
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
