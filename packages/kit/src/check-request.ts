import { create } from '@bufbuild/protobuf';
import { WireType } from '@bufbuild/protobuf/wire';
import type { Timestamp } from '@bufbuild/protobuf/wkt';
import { registryv1 } from '@dnc/proto';

const PHONES_FIELD = 2;
const PHONES_TAG = (PHONES_FIELD << 3) | WireType.LengthDelimited;

function varintLength(n: number): number {
  let len = 1;
  while (n >= 0x80) {
    n >>>= 7;
    len++;
  }
  return len;
}

function writeVarint(buf: Buffer, pos: number, n: number): number {
  while (n >= 0x80) {
    buf[pos++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  buf[pos++] = n;
  return pos;
}

/**
 * A CheckRequest whose `phones` are pre-encoded in one pass. protobuf-es encodes a repeated string
 * field element by element (about 1 s for 500,000 inputs on this machine); the wire format of the
 * field is simply `tag len bytes` per element, which this writes into one buffer and hands to the
 * serializer as the field's raw bytes (protobuf-es writes unknown-field data verbatim after its tag).
 * The receiver decodes an ordinary `repeated string phones`; a unit test checks the bytes decode to
 * the same request.
 */
export function checkRequest(country: string, phones: readonly string[]): registryv1.CheckRequest {
  if (phones.length === 0) return create(registryv1.CheckRequestSchema, { country, phones: [] });
  const data = asciiPhonesField(phones) ?? utf8PhonesField(phones);
  const request = create(registryv1.CheckRequestSchema, { country, phones: [] });
  request.$unknown = [{ no: PHONES_FIELD, wireType: WireType.LengthDelimited, data }];
  return request;
}

/**
 * The field's bytes when every phone is ASCII (the usual case), written in one pass of JavaScript: each
 * UTF-16 unit is the byte (no joined copy of the phones, no Latin-1 conversion, no scan for non-ASCII
 * ahead of the copy: 0.39 -> 0.23 ms for 10,000 phones). The first unit above 0x7f gives up, and the
 * UTF-8 path encodes the field instead.
 */
function asciiPhonesField(phones: readonly string[]): Buffer | undefined {
  let size = 0;
  for (let i = 0; i < phones.length; i++) {
    const n = phones[i]!.length;
    // Every element but the first carries its own tag; the serializer writes the first one.
    size += (i === 0 ? 0 : 1) + varintLength(n) + n;
  }
  const data = Buffer.allocUnsafe(size);
  let pos = 0;
  for (let i = 0; i < phones.length; i++) {
    const phone = phones[i]!;
    const n = phone.length;
    if (i > 0) data[pos++] = PHONES_TAG;
    pos = writeVarint(data, pos, n);
    for (let k = 0; k < n; k++) {
      const unit = phone.charCodeAt(k);
      if (unit > 0x7f) return undefined;
      data[pos++] = unit;
    }
  }
  return data;
}

function utf8PhonesField(phones: readonly string[]): Buffer {
  let size = 0;
  const lengths = new Array<number>(phones.length);
  for (let i = 0; i < phones.length; i++) {
    const n = Buffer.byteLength(phones[i]!, 'utf8');
    lengths[i] = n;
    size += (i === 0 ? 0 : 1) + varintLength(n) + n;
  }
  const data = Buffer.allocUnsafe(size);
  let pos = 0;
  for (let i = 0; i < phones.length; i++) {
    if (i > 0) data[pos++] = PHONES_TAG;
    pos = writeVarint(data, pos, lengths[i]!);
    pos += data.write(phones[i]!, pos, 'utf8');
  }
  return data;
}

const OUTCOMES_FIELD = 1;

/**
 * A CheckResponse whose outcomes are pre-encoded: a packed repeated enum is one varint per element,
 * and every Outcome value is below 128, so the field's bytes ARE the outcomes, one byte each. The
 * adapter keeps them in a Uint8Array and hands them over as the field's raw bytes (as `checkRequest`
 * does with the phones), instead of protobuf-es writing 10,000 (or 50,000) varints one by one. The
 * receiver decodes an ordinary `repeated Outcome outcomes`.
 */
export function checkResponse(answer: {
  outcomes: Uint8Array;
  snapshotId: string;
  snapshotTime?: Timestamp | undefined;
}): registryv1.CheckResponse {
  const { outcomes, snapshotId, snapshotTime } = answer;
  const response = create(registryv1.CheckResponseSchema, {
    outcomes: [],
    snapshotId,
    ...(snapshotTime ? { snapshotTime } : {}),
  });
  if (outcomes.length > 0) {
    for (let i = 0; i < outcomes.length; i++) {
      if (outcomes[i]! > 0x7f) throw new Error('an outcome does not fit one byte');
    }
    // protobuf-es writes an unknown field's tag; the data carries the length and the bytes.
    const data = Buffer.allocUnsafe(varintLength(outcomes.length) + outcomes.length);
    data.set(outcomes, writeVarint(data, 0, outcomes.length));
    response.$unknown = [{ no: OUTCOMES_FIELD, wireType: WireType.LengthDelimited, data }];
  }
  return response;
}
