#!/usr/bin/env node
// The parts of one adapter Check of 10,000 inputs, in ONE process, in alternation (issue 18 item 4):
// the bare floor (validator + index, as scripts/bench/floor.mjs), the adapter's checkPhones with its
// LocalProvider, the phone-length loop, the request's decode by protobuf-es and by the adapter
// (check-request.ts), the answer's encode, and the client's request encode and answer decode. Prints
// p50 and minimum of each (the minimum is what a busy machine leaves readable).
//
//   npm run build && node services/registry-adapter/test/bench/check-parts.mjs
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { isPhoneWithinLimit } from '@dnc/api-contract/limits';
import { checkRequest, checkResponse } from '@dnc/kit';
import { createNumbering } from '@dnc/numbering';
import { registryv1 } from '@dnc/proto';
import { now, summarize } from '../../../../scripts/bench/stats.mjs';
import { COUNTRY, inputs, registryLines } from '../../../../scripts/bench/workload.mjs';
import { checkPhones } from '../../dist/check.js';
import { CheckRequestWireSchema, checkPhonesOf } from '../../dist/check-request.js';
import { RegistryIndex } from '../../dist/index/registry-index.js';
import { KeyBuffer } from '../../dist/key-set.js';
import { LocalProvider } from '../../dist/providers/local-provider.js';

const SIZE = 1_000_000;
const numbering = createNumbering(COUNTRY, 'fast');
const buf = new KeyBuffer();
for (const l of registryLines(SIZE)) buf.push(numbering.normalize(l));
const index = RegistryIndex.fromSorted('x', new Date(), buf.takeSortedDistinct());
const { phones } = inputs(10_000, SIZE, 1);
const reqBytes = toBinary(registryv1.CheckRequestSchema, checkRequest(COUNTRY, phones));
const provider = new LocalProvider({ current: index, confirmedWithin: () => true });
const signal = new AbortController().signal;
const ans = await checkPhones(phones, numbering, provider, signal);
const resMsg = () =>
  checkResponse({ outcomes: ans.outcomes, snapshotId: ans.snapshotId, snapshotTime: undefined });
const resBytes = toBinary(registryv1.CheckResponseSchema, resMsg());
function classify(ps) {
  const o = new Uint8Array(ps.length);
  for (let i = 0; i < ps.length; i++) {
    const k = numbering.normalize(ps[i]);
    o[i] = k > 0 ? (index.has(k) ? 2 : 1) : -k;
  }
  return o;
}
if (classify(phones).join() !== (await checkPhones(phones, numbering, provider, signal)).outcomes.join())
  throw new Error('checkPhones disagrees with the floor');
const decoded = checkPhonesOf(fromBinary(CheckRequestWireSchema, reqBytes), false);
if (decoded.join('\n') !== phones.join('\n')) throw new Error('the adapter decoded other phones');
const cases = {
  floor_bare: () => classify(phones),
  checkPhones_in_process: () => checkPhones(phones, numbering, provider, signal),
  checkPhones_on_decoded_slices: () => checkPhones(decoded, numbering, provider, signal),
  phone_limit_loop: () => {
    for (const p of phones) if (!isPhoneWithinLimit(p)) throw new Error('phone too long');
  },
  decode_protobuf_es: () => fromBinary(registryv1.CheckRequestSchema, reqBytes),
  decode_adapter_now: () => checkPhonesOf(fromBinary(CheckRequestWireSchema, reqBytes), false),
  encode_response: () => toBinary(registryv1.CheckResponseSchema, resMsg()),
  client_encode_request: () => toBinary(registryv1.CheckRequestSchema, checkRequest(COUNTRY, phones)),
  client_decode_response: () => fromBinary(registryv1.CheckResponseSchema, resBytes),
};
const res = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
for (let r = 0; r < 300; r++) {
  for (const [k, f] of Object.entries(cases)) {
    const t = now();
    await f();
    const ms = now() - t;
    if (r >= 50) res[k].push(ms);
  }
}
for (const [k, v] of Object.entries(res)) {
  const s = summarize(v);
  console.log(k.padEnd(30), 'p50', String(s.p50).padStart(6), 'min', String(s.min).padStart(6));
}
