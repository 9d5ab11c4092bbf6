import { create, createFileRegistry, type DescMethod } from '@bufbuild/protobuf';
import type { GenMessage, GenService } from '@bufbuild/protobuf/codegenv1';
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
  file_google_protobuf_timestamp,
  type Timestamp,
} from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@connectrpc/connect';
import { registryv1 } from '@dnc/proto';

/**
 * An adapter's answer to a Check as the platform's clients use it: the outcomes as bytes, one per input
 * (every Outcome value is below 128), in the order of the phones sent.
 */
export interface CheckAnswer {
  outcomes: Uint8Array;
  snapshotId: string;
  snapshotTime?: Timestamp | undefined;
}

const OUTCOMES_FIELD = 1;
/** A field number the contract never uses: the JSON name `outcomes` is read into it (see below). */
const OUTCOMES_JSON_FIELD = 536_870_911;
const { OPTIONAL, REPEATED } = FieldDescriptorProto_Label;

/**
 * How a client reads a CheckResponse (registry_adapter.proto): the same message on the wire, read with a
 * descriptor that declares `snapshot_id` and `snapshot_time` but not `outcomes`. protobuf-es then keeps
 * the outcomes' field records as they are (views of the answer's bytes, framing checked) instead of
 * adding each outcome to an array through its reflection, one call per input (about 37 ms of a
 * 500,000-number job's answers on this machine); `outcomesOf` reads those records. Its own package, so
 * the registry can resolve the real file's `Outcome` beside it.
 *
 * A JSON answer (Connect's `application/json`) decodes `outcomes` into `outcomes_json`, the same JSON
 * name on a field number the contract never uses. A binary answer fills it only if it carries that
 * number, which the real CheckResponse ignores: it is read only when the answer has no `outcomes`
 * record at all (one that carried only that number, which no adapter writes, would then give outcomes
 * where protobuf-es gives none; the callers refuse any answer whose count is not the phones sent).
 */
const file = createFileRegistry(
  create(FileDescriptorProtoSchema, {
    name: 'dnc/registry/v1/registry_adapter_check_answer.proto',
    package: 'dnc.registry.v1.answer',
    syntax: 'proto3',
    dependency: ['google/protobuf/timestamp.proto', 'dnc/registry/v1/registry_adapter.proto'],
    messageType: [
      {
        name: 'CheckResponse',
        field: [
          {
            name: 'snapshot_id',
            number: 2,
            type: FieldDescriptorProto_Type.STRING,
            label: OPTIONAL,
            jsonName: 'snapshotId',
          },
          {
            name: 'snapshot_time',
            number: 3,
            type: FieldDescriptorProto_Type.MESSAGE,
            typeName: '.google.protobuf.Timestamp',
            label: OPTIONAL,
            jsonName: 'snapshotTime',
          },
          {
            name: 'outcomes_json',
            number: OUTCOMES_JSON_FIELD,
            type: FieldDescriptorProto_Type.ENUM,
            typeName: '.dnc.registry.v1.Outcome',
            label: REPEATED,
            jsonName: 'outcomes',
          },
        ],
      },
    ],
  }),
  (name) =>
    [file_google_protobuf_timestamp, registryv1.file_dnc_registry_v1_registry_adapter].find(
      (f) => f.proto.name === name,
    ),
);

/** A CheckResponse as a client reads it (see above); the outcomes come from `outcomesOf`. */
export interface CheckResponseWire {
  $typeName: 'dnc.registry.v1.answer.CheckResponse';
  snapshotId: string;
  snapshotTime?: Timestamp | undefined;
  outcomesJson: registryv1.Outcome[];
  $unknown?: { no: number; wireType: WireType; data: Uint8Array }[];
}

export const CheckResponseWireSchema = file.getMessage(
  'dnc.registry.v1.answer.CheckResponse',
) as unknown as GenMessage<CheckResponseWire>;

/** RegistryAdapterService with only Check, its answer read with `CheckResponseWireSchema`. */
export type RegistryAdapterCheckService = GenService<{
  check: {
    methodKind: 'unary';
    input: typeof registryv1.CheckRequestSchema;
    output: typeof CheckResponseWireSchema;
  };
}>;

const service = registryv1.RegistryAdapterService;
const check = { ...service.method.check, output: CheckResponseWireSchema } as unknown as DescMethod;

/**
 * The adapter service as the platform's clients call it (`createClient` of this): the same service and
 * method names, so the same paths and the same authorization, with Check's answer read as above.
 */
export const RegistryAdapterCheck = {
  ...service,
  methods: [check],
  method: { check },
} as unknown as RegistryAdapterCheckService;

/** An outcome value as one byte: any value outside a byte is no Outcome, so it reads as UNSPECIFIED. */
const oneByte = (value: number): number =>
  value >= 0 && value <= 0xff ? value : registryv1.Outcome.UNSPECIFIED;

/**
 * The answer's outcomes, in order, as protobuf-es would have read `repeated Outcome outcomes`: every
 * record of field 1, packed (a length, then varints) or not (one varint). The usual answer, one packed
 * record of one-byte varints, is returned as a view of its bytes, not copied. A value that is no byte is
 * UNSPECIFIED (inconclusive, as any value that is no Outcome already was for every caller).
 */
export function outcomesOf(answer: CheckResponseWire): Uint8Array {
  const records = (answer.$unknown ?? []).filter((r) => r.no === OUTCOMES_FIELD);
  if (records.length === 0) return Uint8Array.from(answer.outcomesJson, oneByte);
  if (records.length === 1 && records[0]!.wireType === WireType.LengthDelimited) {
    const data = records[0]!.data;
    const reader = new BinaryReader(data);
    reader.uint32();
    const values = data.subarray(reader.pos);
    if (allOneByte(values)) return values;
  }
  try {
    return Uint8Array.from(records.flatMap(recordOutcomes));
  } catch (error) {
    // Connect's own code and wording for an answer protobuf-es could not decode.
    throw new ConnectError(
      `parse binary: ${error instanceof Error ? error.message : String(error)}`,
      Code.Internal,
    );
  }
}

function allOneByte(values: Uint8Array): boolean {
  for (let i = 0; i < values.length; i++) if (values[i]! >= 0x80) return false;
  return true;
}

/** The outcomes of one record of field 1, read as protobuf-es reads a repeated enum's record. */
function recordOutcomes({ wireType, data }: { wireType: WireType; data: Uint8Array }): number[] {
  const reader = new BinaryReader(data);
  if (wireType === WireType.Varint) return [oneByte(reader.int32())];
  // protobuf-es would misread any other wire type as a varint; no adapter of the contract writes one.
  if (wireType !== WireType.LengthDelimited) throw new Error(`outcomes of wire type ${wireType}`);
  const out: number[] = [];
  const end = reader.uint32() + reader.pos;
  while (reader.pos < end) out.push(oneByte(reader.int32()));
  return out;
}

/** The answer as the platform's callers use it. */
export function checkAnswerOf(answer: CheckResponseWire): CheckAnswer {
  return {
    outcomes: outcomesOf(answer),
    snapshotId: answer.snapshotId,
    ...(answer.snapshotTime ? { snapshotTime: answer.snapshotTime } : {}),
  };
}
