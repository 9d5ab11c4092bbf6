import { create, fromBinary, fromJsonString, toBinary, toJsonString } from '@bufbuild/protobuf';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@connectrpc/connect';
import { registryv1 } from '@dnc/proto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CheckResponseWireSchema, checkAnswerOf, outcomesOf } from '../src/check-answer.js';
import { checkResponse } from '../src/check-request.js';

const { Outcome } = registryv1;
const snapshotTime = timestampFromDate(new Date('2026-01-02T03:04:05Z'));

/** What every caller saw before: protobuf-es's own reading, a value that is no byte as UNSPECIFIED. */
function asProtobufEsReadsIt(bytes: Uint8Array): number[] {
  return fromBinary(registryv1.CheckResponseSchema, bytes).outcomes.map((v) =>
    v >= 0 && v <= 0xff ? v : Outcome.UNSPECIFIED,
  );
}

const read = (bytes: Uint8Array) => checkAnswerOf(fromBinary(CheckResponseWireSchema, bytes));

/** Field 1 written in pieces: each piece packed (one record) or unpacked (a record per value). */
function inPieces(pieces: { packed: boolean; values: number[] }[]): Uint8Array {
  const w = new BinaryWriter();
  w.tag(2, WireType.LengthDelimited).string('s1');
  for (const { packed, values } of pieces) {
    if (packed) {
      w.tag(1, WireType.LengthDelimited).fork();
      for (const v of values) w.int32(v);
      w.join();
    } else for (const v of values) w.tag(1, WireType.Varint).int32(v);
  }
  return w.finish();
}

describe("a Check answer's outcomes, read as bytes", () => {
  it("the adapter's answer (kit checkResponse): the outcomes as a view of the answer's bytes, not copied", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 0x7f }), { maxLength: 300 }), (values) => {
        const bytes = toBinary(
          registryv1.CheckResponseSchema,
          checkResponse({ outcomes: Uint8Array.from(values), snapshotId: 's1', snapshotTime }),
        );
        const answer = read(bytes);
        expect([...answer.outcomes]).toEqual(values);
        expect([...answer.outcomes]).toEqual(asProtobufEsReadsIt(bytes));
        expect(answer.snapshotId).toBe('s1');
        expect(answer.snapshotTime).toEqual(snapshotTime);
        if (values.length > 0) expect(answer.outcomes.buffer).toBe(bytes.buffer);
      }),
      { numRuns: 300 },
    );
  });

  it('any encoding protobuf-es reads (split, unpacked, values past a byte, negative): the same outcomes', () => {
    const value = fc.oneof(
      fc.integer({ min: 0, max: 8 }),
      fc.integer({ min: 0, max: 0xffff }),
      fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
    );
    const piece = fc.record({ packed: fc.boolean(), values: fc.array(value, { maxLength: 40 }) });
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 5 }), (pieces) => {
        const bytes = inPieces(pieces);
        const outcomes = read(bytes).outcomes;
        expect(outcomes).toBeInstanceOf(Uint8Array);
        expect([...outcomes]).toEqual(asProtobufEsReadsIt(bytes));
      }),
      { numRuns: 500 },
    );
  });

  it('a value that is no byte reads as UNSPECIFIED, which no caller takes as an answer', () => {
    const bytes = inPieces([{ packed: true, values: [Outcome.SAFE, 300, -1, Outcome.PROHIBITED] }]);
    expect([...read(bytes).outcomes]).toEqual([
      Outcome.SAFE,
      Outcome.UNSPECIFIED,
      Outcome.UNSPECIFIED,
      Outcome.PROHIBITED,
    ]);
  });

  it('a JSON answer (outcomes by name) reads the same', () => {
    const values = [Outcome.SAFE, Outcome.PROHIBITED, Outcome.INVALID_LENGTH, Outcome.INVALID_WRONG_COUNTRY];
    const json = toJsonString(
      registryv1.CheckResponseSchema,
      create(registryv1.CheckResponseSchema, { outcomes: values, snapshotId: 's1', snapshotTime }),
    );
    expect(json).toContain('"OUTCOME_PROHIBITED"');
    const answer = checkAnswerOf(fromJsonString(CheckResponseWireSchema, json));
    expect([...answer.outcomes]).toEqual(values);
    expect(answer.snapshotId).toBe('s1');
    expect(answer.snapshotTime).toEqual(snapshotTime);
  });

  it("a binary answer that also carries the JSON field's number: its outcomes record, as protobuf-es reads it", () => {
    const w = new BinaryWriter();
    w.tag(1, WireType.LengthDelimited).bytes(Uint8Array.from([Outcome.SAFE, Outcome.PROHIBITED]));
    w.tag(536_870_911, WireType.Varint).int32(Outcome.INVALID_LENGTH);
    const bytes = w.finish();
    expect([...read(bytes).outcomes]).toEqual(asProtobufEsReadsIt(bytes));
    expect([...read(bytes).outcomes]).toEqual([Outcome.SAFE, Outcome.PROHIBITED]);
  });

  it('no outcomes: an empty answer', () => {
    const bytes = toBinary(
      registryv1.CheckResponseSchema,
      create(registryv1.CheckResponseSchema, { outcomes: [], snapshotId: 's1' }),
    );
    const answer = read(bytes);
    expect(answer.outcomes).toEqual(new Uint8Array());
    expect(answer.snapshotTime).toBeUndefined();
  });

  it('outcomes of another wire type, or a varint cut short inside its record: refused as Connect refuses an undecodable answer', () => {
    const fixed = new BinaryWriter().tag(1, WireType.Bit32).fixed32(1).finish();
    const cut = Uint8Array.from([(1 << 3) | WireType.LengthDelimited, 2, Outcome.SAFE, 0x80]);
    for (const bytes of [fixed, cut]) {
      const error = (() => {
        try {
          outcomesOf(fromBinary(CheckResponseWireSchema, bytes));
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(ConnectError);
      expect((error as ConnectError).code).toBe(Code.Internal);
    }
    // protobuf-es refuses the cut varint too.
    expect(() => fromBinary(registryv1.CheckResponseSchema, cut)).toThrow();
  });
});
