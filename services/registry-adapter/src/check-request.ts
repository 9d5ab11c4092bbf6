import { isAscii as isAllAscii } from 'node:buffer';
import { create, createFileRegistry, type DescMessage, type DescMethod } from '@bufbuild/protobuf';
import { BinaryReader, getTextEncoding, WireType } from '@bufbuild/protobuf/wire';
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
} from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@connectrpc/connect';
import { validationError } from '@dnc/kit';
import { registryv1 } from '@dnc/proto';

/**
 * How the adapter reads a CheckRequest. The platform's clients send `phone_list` (registry_adapter.proto):
 * every phone in one `bytes` field, which protobuf-es hands over as a view of the request and
 * `checkPhonesOf` walks in one pass. Requests with `phones`, one field record each (other clients of the
 * contract, JSON), are read as follows: the same message on the wire (`country = 1`, `repeated string
 * phones = 2`), read with a descriptor that declares only `country`, so protobuf-es reads past each
 * phone as an unknown field record (checking the framing: tags, lengths, bounds) instead of making a
 * string per phone through its reflection (3 ms of a 10,000-phone Check on this machine, more than the
 * validation and lookup of the same phones). `checkPhonesOf` then makes the strings from those records.
 *
 * Connect has no per-method decoder (connect-es 2.1: the router decodes every request with `fromBinary`
 * of the method's input), so the method is served with this descriptor as its input instead.
 *
 * JSON requests (Connect's `application/json`) decode `phones` into `phonesJson`: the same JSON name on
 * a field number the contract never uses. A binary request never fills it unless it carries that number,
 * which the real CheckRequest would have ignored as unknown; the handler ignores it in binary requests.
 */
const JSON_PHONES_FIELD = 536_870_911;
const PHONES_FIELD = 2;
const PHONE_LIST_FIELD = 3;

const file = createFileRegistry(
  create(FileDescriptorProtoSchema, {
    name: 'dnc/registry/v1/registry_adapter_check_wire.proto',
    package: 'dnc.registry.v1',
    syntax: 'proto3',
    messageType: [
      {
        name: 'CheckRequest',
        field: [
          {
            name: 'country',
            number: 1,
            type: FieldDescriptorProto_Type.STRING,
            label: FieldDescriptorProto_Label.OPTIONAL,
            jsonName: 'country',
          },
          {
            name: 'phone_list',
            number: PHONE_LIST_FIELD,
            type: FieldDescriptorProto_Type.BYTES,
            label: FieldDescriptorProto_Label.OPTIONAL,
            jsonName: 'phoneList',
          },
          {
            name: 'phones_json',
            number: JSON_PHONES_FIELD,
            type: FieldDescriptorProto_Type.STRING,
            label: FieldDescriptorProto_Label.REPEATED,
            jsonName: 'phones',
          },
        ],
      },
    ],
  }),
  () => undefined,
);

/** A CheckRequest as the adapter reads it (see above); the phones come from `checkPhonesOf`. */
export interface CheckRequestWire {
  $typeName: 'dnc.registry.v1.CheckRequest';
  country: string;
  /** `phone_list` (registry_adapter.proto): every phone in one field, a view of the request's bytes. */
  phoneList: Uint8Array;
  phonesJson: string[];
  $unknown?: { no: number; wireType: WireType; data: Uint8Array }[];
}

export const CheckRequestWireSchema = file.getMessage('dnc.registry.v1.CheckRequest') as DescMessage;

/** RegistryAdapterService.Check, its request read with `CheckRequestWireSchema`. */
export const checkMethod: DescMethod = {
  ...registryv1.RegistryAdapterService.method.check,
  input: CheckRequestWireSchema,
} as DescMethod;

/** A phone of bytes over 0x7f: UTF-8, refused as protobuf-es refuses it (strict decoding). */
function utf8Phone(bytes: Uint8Array): string {
  try {
    return getTextEncoding().decodeUtf8(bytes, true);
  } catch (error) {
    // Connect's own message for a request protobuf-es could not decode (createBinarySerialization).
    const m = error instanceof Error ? error.message : String(error);
    throw new ConnectError(`parse binary: ${m}`, Code.Internal);
  }
}

type UnknownRecord = NonNullable<CheckRequestWire['$unknown']>[number];

/**
 * The phones of a request read with `CheckRequestWireSchema`, in order: the `phones` records left in
 * `$unknown`, or `phonesJson` for a JSON request. The records are views of the request's bytes
 * (protobuf-es's reader slices, never copies; checked, not assumed): the phones are read from those
 * bytes in one walk, each ASCII phone (the usual case) a slice of ONE Latin-1 string of them, any other
 * through protobuf-es's own strict UTF-8 decoding. So the strings, and the requests refused for
 * invalid UTF-8, are the ones `fromBinary` of the real CheckRequest gives.
 */
export function checkPhonesOf(request: CheckRequestWire, json: boolean): string[] {
  if (request.phoneList.length > 0) {
    const inPhones = json
      ? request.phonesJson.length > 0
      : (request.$unknown ?? []).some((r) => r.no === PHONES_FIELD);
    if (inPhones) throw validationError('a Check request sets phones or phone_list, not both');
    return phoneListOf(request.phoneList);
  }
  if (json) return request.phonesJson;
  const records = request.$unknown;
  if (!records || records.length === 0) return [];
  const first = records[0]!.data;
  const last = records[records.length - 1]!.data;
  if (first.buffer !== last.buffer || last.byteOffset < first.byteOffset) return records.map(phoneOfRecord);
  const bytes = Buffer.from(
    first.buffer,
    first.byteOffset,
    last.byteOffset + last.byteLength - first.byteOffset,
  );
  return new RecordWalk(bytes).phones(records);
}

/**
 * The phones of a `phone_list`: each one's length (a varint, read as protobuf-es reads a string's
 * length) and its bytes, up to the field's end exactly; strings made as for the `phones` records.
 */
function phoneListOf(list: Uint8Array): string[] {
  const bytes = Buffer.from(list.buffer, list.byteOffset, list.byteLength);
  const walk = new RecordWalk(bytes);
  const phones: string[] = [];
  try {
    while (!walk.atEnd()) phones.push(walk.phone());
  } catch (error) {
    if (error instanceof ConnectError) throw error;
    // protobuf-es's reader on a length varint cut short (premature EOF, invalid varint).
    throw new ConnectError(`parse binary: ${error instanceof Error ? error.message : error}`, Code.Internal);
  }
  return phones;
}

/** One record's phone from its own view (its data: the length varint, then the bytes). */
function phoneOfRecord(record: UnknownRecord): string {
  if (record.wireType !== WireType.LengthDelimited) throw notLengthDelimited();
  const walk = new RecordWalk(
    Buffer.from(record.data.buffer, record.data.byteOffset, record.data.byteLength),
  );
  return walk.phone();
}

const notLengthDelimited = () =>
  new ConnectError('parse binary: phones is not length-delimited', Code.Internal);

/**
 * A walk over the bytes from the first record's data to the last record's end, which protobuf-es has
 * already read without error: between two records lie only tags and the fields it decoded itself
 * (`country`, `phonesJson` and `phone_list`: a length varint and the bytes).
 */
class RecordWalk {
  /** protobuf-es's own reader, for its varints exactly (lengths are read as uint32, as it reads them). */
  private readonly reader: BinaryReader;
  private text: string | undefined;
  private readonly ascii: boolean;

  constructor(private readonly bytes: Buffer) {
    this.reader = new BinaryReader(bytes);
    // One native scan: a request of ASCII phones needs no check per phone.
    this.ascii = isAllAscii(bytes);
  }

  phones(records: UnknownRecord[]): string[] {
    const phones: string[] = [];
    for (let i = 0; i < records.length; i++) {
      const record = records[i]!;
      // At the first record's data already; before any other, past its tag and the decoded fields.
      if (i > 0) this.toNextRecord();
      if (record.no !== PHONES_FIELD) {
        this.reader.pos += record.data.byteLength;
        continue;
      }
      if (record.wireType !== WireType.LengthDelimited) throw notLengthDelimited();
      phones.push(this.phone());
    }
    return phones;
  }

  /**
   * Past the tags and payloads of decoded fields (`country`, `phonesJson`, and an empty `phone_list`: a
   * non-empty one with phones is refused before), and the tag of the next unknown record.
   */
  private toNextRecord(): void {
    const reader = this.reader;
    for (;;) {
      const [no] = reader.tag();
      if (no !== 1 && no !== JSON_PHONES_FIELD && no !== PHONE_LIST_FIELD) return;
      reader.skip(WireType.LengthDelimited, no);
    }
  }

  atEnd(): boolean {
    return this.reader.pos >= this.bytes.length;
  }

  /** The length-delimited string at the walk's position. */
  phone(): string {
    const reader = this.reader;
    const length = reader.uint32();
    const from = reader.pos;
    const to = from + length;
    reader.pos = to;
    if (to > this.bytes.length) throw new ConnectError('parse binary: premature EOF', Code.Internal);
    if (this.ascii || isAscii(this.bytes, from, to)) {
      if (this.text === undefined) this.text = this.bytes.toString('latin1');
      return this.text.slice(from, to);
    }
    return utf8Phone(this.bytes.subarray(from, to));
  }
}

function isAscii(bytes: Uint8Array, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (bytes[i]! > 0x7f) return false;
  return true;
}
