// Assertions of the conformance suite (suite.mjs and the tests beside it).
import { registryv1 } from '@dnc/proto';
import grpc from '@grpc/grpc-js';

const { Outcome } = registryv1;

export const name = (o) => Outcome[o] ?? String(o);

/** A protobuf varint (phone_list: each input's byte length). */
export function varint(n) {
  const out = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return out;
}

export function assert(condition, message) {
  if (!condition) throw new Error(message);
}

export function expectGrpcCode(error, codes, what) {
  assert(error && typeof error.code === 'number', `${what}: expected a gRPC error, got an answer`);
  assert(
    codes.includes(error.code),
    `${what}: expected ${codes.map((c) => grpc.status[c]).join(' or ')}, got ${grpc.status[error.code]}`,
  );
}
