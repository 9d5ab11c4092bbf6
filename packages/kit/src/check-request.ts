import { create } from '@bufbuild/protobuf';
import { WireType } from '@bufbuild/protobuf/wire';
import type { Timestamp } from '@bufbuild/protobuf/wkt';
import { type CallOptions, type Client, Code, ConnectError } from '@connectrpc/connect';
import { registryv1 } from '@dnc/proto';
import {
  type CheckAnswer,
  type CheckResponseWire,
  checkAnswerOf,
  type RegistryAdapterCheck,
} from './check-answer.js';

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
 * Phones already in the form `CheckRequest.phone_list` holds them (registry_adapter.proto): each one a
 * length varint and its UTF-8 bytes, one after another, `count` of them. For a caller that holds its
 * phones as bytes rather than strings (the job worker reads a job's input that way): `checkRequest` and
 * `checkAt` send these bytes as they are, or with a tag before each as `phones`. Written with
 * `PhoneListWriter`.
 */
export class PhoneList {
  constructor(
    readonly count: number,
    readonly bytes: Buffer,
  ) {}

  /** The same records as the `phones` field's bytes (after its first tag): a tag before every other one. */
  tagged(): Buffer {
    const src = this.bytes;
    const out = Buffer.allocUnsafe(src.length + Math.max(0, this.count - 1));
    let at = 0;
    let pos = 0;
    for (let i = 0; i < this.count; i++) {
      if (i > 0) out[pos++] = PHONES_TAG;
      let n = 0;
      let shift = 0;
      const start = at;
      for (;;) {
        const b = src[at++];
        if (b === undefined) throw new Error('a phone list record is cut short');
        n += (b & 0x7f) * 2 ** shift;
        shift += 7;
        if (b < 0x80) break;
      }
      at += n;
      if (at > src.length) throw new Error('a phone list record is cut short');
      pos += src.copy(out, pos, start, at);
    }
    if (at !== src.length) throw new Error('a phone list holds more than its count');
    return out;
  }
}

/**
 * Writes a `PhoneList` from phones' UTF-8 bytes, whose total size the caller knows in advance
 * (`recordSize` of each phone's byte length, summed): one buffer, each phone's bytes copied into it.
 */
export class PhoneListWriter {
  private readonly data: Buffer;
  private pos = 0;
  private count = 0;

  /** What one phone of `byteLength` UTF-8 bytes takes in the list. */
  static recordSize(byteLength: number): number {
    return varintLength(byteLength) + byteLength;
  }

  constructor(size: number) {
    this.data = Buffer.allocUnsafe(size);
  }

  /** One phone: the UTF-8 bytes `source[from, to)`. */
  add(source: Uint8Array, from: number, to: number): void {
    const data = this.data;
    let pos = writeVarint(data, this.pos, to - from);
    if (pos + (to - from) > data.length) throw new Error('the phone list outgrew its size');
    // Phones are a few bytes each: a loop beats a native copy's call for them.
    for (let k = from; k < to; k++) data[pos++] = source[k]!;
    this.pos = pos;
    this.count++;
  }

  finish(): PhoneList {
    if (this.pos !== this.data.length) throw new Error('the phone list is not the size it was given');
    return new PhoneList(this.count, this.data);
  }
}

const phoneCount = (phones: readonly string[] | PhoneList): number =>
  phones instanceof PhoneList ? phones.count : phones.length;

/** The response header of an adapter that reads `CheckRequest.phone_list` (registry_adapter.proto). */
export const PHONE_LIST_HEADER = 'dnc-check-phone-list';

/**
 * How a CheckRequest carries its phones: `phone_list`, one field of them all (for an adapter that reads
 * it, see `checkAt`), or `phones`, one field record per phone (every adapter reads it).
 */
export type PhonesForm = 'phone_list' | 'phones';

/**
 * A CheckRequest whose phones are pre-encoded in one pass. protobuf-es encodes a repeated string field
 * element by element (about 1 s for 500,000 inputs on this machine); the wire format of `phones` is
 * simply `tag len bytes` per element, which this writes into one buffer and hands to the serializer as
 * the field's raw bytes (protobuf-es writes unknown-field data verbatim after its tag): the receiver
 * decodes an ordinary `repeated string phones`. `phone_list` is the same records without their tags,
 * as one `bytes` field. A unit test checks both decode to the same phones.
 */
export function checkRequest(
  country: string,
  phones: readonly string[] | PhoneList,
  form: PhonesForm = 'phones',
): registryv1.CheckRequest {
  if (phoneCount(phones) === 0) return create(registryv1.CheckRequestSchema, { country, phones: [] });
  const tagged = form === 'phones';
  const data =
    phones instanceof PhoneList
      ? tagged
        ? phones.tagged()
        : phones.bytes
      : (asciiPhonesField(phones, tagged) ?? utf8PhonesField(phones, tagged));
  if (!tagged) return create(registryv1.CheckRequestSchema, { country, phoneList: data });
  const request = create(registryv1.CheckRequestSchema, { country, phones: [] });
  request.$unknown = [{ no: PHONES_FIELD, wireType: WireType.LengthDelimited, data }];
  return request;
}

/**
 * The field's bytes when every phone is ASCII (the usual case), written in one pass of JavaScript: each
 * UTF-16 unit is the byte (no joined copy of the phones, no Latin-1 conversion, no scan for non-ASCII
 * ahead of the copy: 0.39 -> 0.23 ms for 10,000 phones). The first unit above 0x7f gives up, and the
 * UTF-8 path encodes the field instead. `tagged`: every element but the first carries its own tag (the
 * serializer writes the first one); untagged, the elements follow each other (`phone_list`).
 */
function asciiPhonesField(phones: readonly string[], tagged: boolean): Buffer | undefined {
  let size = 0;
  for (let i = 0; i < phones.length; i++) {
    const n = phones[i]!.length;
    size += (tagged && i > 0 ? 1 : 0) + varintLength(n) + n;
  }
  const data = Buffer.allocUnsafe(size);
  let pos = 0;
  for (let i = 0; i < phones.length; i++) {
    const phone = phones[i]!;
    const n = phone.length;
    if (tagged && i > 0) data[pos++] = PHONES_TAG;
    pos = writeVarint(data, pos, n);
    for (let k = 0; k < n; k++) {
      const unit = phone.charCodeAt(k);
      if (unit > 0x7f) return undefined;
      data[pos++] = unit;
    }
  }
  return data;
}

function utf8PhonesField(phones: readonly string[], tagged: boolean): Buffer {
  let size = 0;
  const lengths = new Array<number>(phones.length);
  for (let i = 0; i < phones.length; i++) {
    const n = Buffer.byteLength(phones[i]!, 'utf8');
    lengths[i] = n;
    size += (tagged && i > 0 ? 1 : 0) + varintLength(n) + n;
  }
  const data = Buffer.allocUnsafe(size);
  let pos = 0;
  for (let i = 0; i < phones.length; i++) {
    if (tagged && i > 0) data[pos++] = PHONES_TAG;
    pos = writeVarint(data, pos, lengths[i]!);
    pos += data.write(phones[i]!, pos, 'utf8');
  }
  return data;
}

/** A client of an adapter's Check (`createClient(RegistryAdapterCheck, transport)`). */
export type AdapterClient = Client<typeof RegistryAdapterCheck>;

/** How long a client sends `phones` to an adapter that ignored `phone_list`, before it tries again. */
export const PHONES_ONLY_MS = 60_000;
const phonesOnlyUntil = new WeakMap<AdapterClient, number>();

/**
 * `client.check` of `phones`, sent as `phone_list` (registry_adapter.proto): one field the adapter reads
 * in one walk, instead of a field record per phone through protobuf-es's reflection (half the decoding
 * of a 10,000-phone Check, four fifths of a 50,000-phone unit's: scripts/bench/README.md). An adapter that reads it says so on every answer (the
 * `dnc-check-phone-list` header). A successful answer without it comes from an adapter that ignored the
 * field and answered no inputs (one from before it, or another implementation of the contract; during a
 * rolling deployment both are normal): the same Check is sent again as `phones`, within what is left of
 * the call's timeout, and that client sends `phones` for `PHONES_ONLY_MS` before it tries `phone_list`
 * again. An adapter that refuses a request without phones (INVALID_ARGUMENT and no header) is treated
 * alike. Every other failure is the call's own. The caller checks the answer as before (one outcome
 * per input): an adapter's answer is used only when it covers the phones that were sent.
 */
export async function checkAt(
  client: AdapterClient,
  country: string,
  phones: readonly string[] | PhoneList,
  options: CallOptions = {},
): Promise<CheckAnswer> {
  return checkAnswerOf(await checkOnce(client, country, phones, options));
}

async function checkOnce(
  client: AdapterClient,
  country: string,
  phones: readonly string[] | PhoneList,
  options: CallOptions,
): Promise<CheckResponseWire> {
  const until = phonesOnlyUntil.get(client);
  if (phoneCount(phones) === 0 || (until !== undefined && Date.now() < until))
    return client.check(checkRequest(country, phones), options);
  const started = Date.now();
  let reads = false;
  try {
    const answer = await client.check(checkRequest(country, phones, 'phone_list'), {
      ...options,
      onHeader(header) {
        reads = header.get(PHONE_LIST_HEADER) === '1';
        options.onHeader?.(header);
      },
    });
    if (reads) return answer;
  } catch (error) {
    const ce = ConnectError.from(error);
    if (ce.code !== Code.InvalidArgument || ce.metadata.get(PHONE_LIST_HEADER) === '1') throw error;
  }
  phonesOnlyUntil.set(client, Date.now() + PHONES_ONLY_MS);
  const { timeoutMs } = options;
  const left = timeoutMs === undefined ? {} : { timeoutMs: Math.max(1, timeoutMs - (Date.now() - started)) };
  return client.check(checkRequest(country, phones), { ...options, ...left });
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
