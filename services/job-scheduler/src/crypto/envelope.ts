import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { BLOB_FORMAT, type BlobFormat } from './segment-codec.js';

/**
 * Envelope encryption of job blobs: AES-256-GCM under a random 256-bit data key per job blob, the
 * data key wrapped by a key-encryption key (KEK) that has an id. The additional authenticated data
 * binds job, organization, blob kind and segment position, so a ciphertext moved to another job,
 * organization, kind or position (or a truncated blob) fails to open.
 */
export type BlobKind = 'input' | 'result';

const NONCE_BYTES = 12;
const TAG_BYTES = 16;

export class KeyRing {
  private constructor(
    private readonly keys: ReadonlyMap<string, Buffer>,
    readonly activeId: string,
  ) {}

  /** `id1:base64,id2:base64`; every key must be 32 bytes; the active id must be present. */
  static parse(spec: string, activeId: string): KeyRing {
    const keys = new Map<string, Buffer>();
    for (const part of spec.split(',')) {
      const at = part.indexOf(':');
      const id = part.slice(0, at).trim();
      const key = Buffer.from(part.slice(at + 1).trim(), 'base64');
      if (at <= 0 || !/^[A-Za-z0-9_.-]{1,64}$/.test(id))
        throw new Error('DNC_KEKS: each entry must be id:base64');
      if (key.length !== 32) throw new Error(`DNC_KEKS: key ${id} must be 32 bytes (base64)`);
      if (keys.has(id)) throw new Error(`DNC_KEKS: key id ${id} appears twice`);
      keys.set(id, key);
    }
    if (!keys.has(activeId)) throw new Error('DNC_KEK_ACTIVE_ID: not one of the ids in DNC_KEKS');
    return new KeyRing(keys, activeId);
  }

  /** The configured key ids, the active one included. */
  get ids(): string[] {
    return [...this.keys.keys()];
  }

  has(id: string): boolean {
    return this.keys.has(id);
  }

  private kek(id: string): Buffer {
    const key = this.keys.get(id);
    if (!key) throw new Error(`key-encryption key ${id} is not configured`);
    return key;
  }

  /** A fresh data key, and its wrapped form under the active KEK. */
  newDataKey(binding: BlobBinding): { dek: Buffer; kekId: string; wrapped: Buffer } {
    const dek = randomBytes(32);
    const wrapped = seal(this.kek(this.activeId), dek, aad('dek', binding));
    return { dek, kekId: this.activeId, wrapped };
  }

  unwrap(kekId: string, wrapped: Buffer, binding: BlobBinding): Buffer {
    return open(this.kek(kekId), wrapped, aad('dek', binding));
  }
}

export interface BlobBinding {
  jobId: string;
  orgId: string;
  kind: BlobKind;
}

function aad(purpose: string, b: BlobBinding, seq?: number, last?: boolean): Buffer {
  const tail = seq === undefined ? '' : `|${seq}|${last ? 'last' : 'more'}`;
  return Buffer.from(`dnc.jobs.v1|${purpose}|${b.jobId}|${b.orgId}|${b.kind}${tail}`, 'utf8');
}

/**
 * Segments are megabytes: each copy of one is a fresh buffer whose pages are faulted in one by one and
 * external memory that brings the next full collection closer (the worker seals and opens a job's whole
 * input and result). So the ciphertext is copied once, into the sealed value, and an opened segment is
 * the decipher's own output (GCM's `final` returns nothing after the tag checks).
 */
function seal(key: Buffer, plaintext: Buffer, additional: Buffer): Buffer {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(additional);
  const body = cipher.update(plaintext);
  const tail = cipher.final();
  return Buffer.concat([nonce, body, tail, cipher.getAuthTag()]);
}

function open(key: Buffer, sealed: Buffer, additional: Buffer): Buffer {
  if (sealed.length < NONCE_BYTES + TAG_BYTES) throw new Error('sealed value too short');
  const nonce = sealed.subarray(0, NONCE_BYTES);
  const tag = sealed.subarray(sealed.length - TAG_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', key, nonce);
  decipher.setAAD(additional);
  decipher.setAuthTag(tag);
  const body = decipher.update(sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES));
  const tail = decipher.final();
  return tail.length === 0 ? body : Buffer.concat([body, tail]);
}

/**
 * One segment of a blob: nonce || ciphertext || tag, bound to its position and to its blob's format
 * (segment-codec.ts): a framed segment is sealed under other associated data than a raw one.
 */
export function sealSegment(
  dek: Buffer,
  binding: BlobBinding,
  seq: number,
  last: boolean,
  plain: Buffer,
  format: BlobFormat = BLOB_FORMAT.raw,
): Buffer {
  return seal(dek, plain, aad(segmentPurpose(format), binding, seq, last));
}

export function openSegment(
  dek: Buffer,
  binding: BlobBinding,
  seq: number,
  last: boolean,
  sealed: Buffer,
  format: BlobFormat = BLOB_FORMAT.raw,
): Buffer {
  return open(dek, sealed, aad(segmentPurpose(format), binding, seq, last));
}

const segmentPurpose = (format: BlobFormat) => (format === BLOB_FORMAT.raw ? 'segment' : 'segment.framed');

/** The plaintext bytes of one segment (the last one may be shorter). */
export const SEGMENT_BYTES = 1 << 20;

/**
 * Split text (or bytes) into segments of at most `segmentBytes` bytes each (at least one segment). A
 * segment that lies within one piece is a view of it, not a copy: a submitted input arrives as one
 * buffer, and copying its 8 MB into segments cost 5 ms with reused memory and up to ~25 ms with fresh
 * pages (faulted in one at a time on this VM). Only a segment that spans pieces is concatenated. The
 * views are read, never written (framing compresses them, sealing encrypts a copy).
 */
export function* segmentsOf(
  pieces: Iterable<string | Buffer>,
  segmentBytes = SEGMENT_BYTES,
): Generator<Buffer> {
  let pending: Buffer[] = [];
  let size = 0;
  let emitted = false;
  const flush = () => {
    const segment = pending.length === 1 ? (pending[0] as Buffer) : Buffer.concat(pending, size);
    pending = [];
    size = 0;
    emitted = true;
    return segment;
  };
  for (const piece of pieces) {
    let buf = typeof piece === 'string' ? Buffer.from(piece, 'utf8') : piece;
    while (size + buf.length >= segmentBytes) {
      const take = segmentBytes - size;
      pending.push(buf.subarray(0, take));
      size += take;
      yield flush();
      buf = buf.subarray(take);
    }
    if (buf.length > 0) {
      pending.push(buf);
      size += buf.length;
    }
  }
  if (size > 0 || !emitted) yield flush();
}
