import { create } from '@bufbuild/protobuf';
import {
  Batcher,
  type BatcherOptions,
  Code,
  ConnectError,
  checkRequest,
  errorOfRpcStatus,
  Histogram,
  type Registry,
} from '@dnc/kit';
import { admissionv1, type registryv1 } from '@dnc/proto';
import type { AdmitRequest, Upstream } from '../flows/port.js';
import type { UpstreamClients } from './clients.js';

/**
 * How the hot internal calls of a scrub travel: batched across the requests in flight. The Admit,
 * Check and Complete calls that arrive while one of the same kind is on the wire go together in the
 * next one (kit Batcher: a lone call leaves at once). One internal round trip then serves many public
 * requests, which is what lets one gateway and one admission carry thousands of single-number scrubs a
 * second (scripts/bench/README.md). Each request keeps its own answer and its own error; a batch
 * carries the earliest deadline of its members.
 */
export type BatchedCalls = Pick<Upstream, 'admit' | 'check' | 'complete'>;

/** A Check of at most this many inputs may share an adapter call with others; larger ones go alone. */
export const CHECK_SHARE_MAX_INPUTS = 256;
const LIMITS = { maxBatch: 64, maxInFlight: 4, sameTurn: true };

interface Timed<T> {
  value: T;
  deadline: number;
}

/** Time left for a batch: the earliest deadline among its items. */
function remaining(items: Timed<unknown>[]): number {
  return Math.min(...items.map((i) => i.deadline)) - Date.now();
}

function expired(): ConnectError {
  return new ConnectError('deadline exceeded before the call was sent', Code.DeadlineExceeded);
}

export function batchedCalls(upstreams: UpstreamClients, metrics?: Registry): BatchedCalls {
  const sizes = new Histogram({
    name: 'dnc_gateway_batch_size',
    help: 'Requests per batched internal call, by call.',
    labelNames: ['call'],
    buckets: [1, 2, 4, 8, 16, 32, 64],
    registers: metrics ? [metrics] : [],
  });
  const options = (call: string): BatcherOptions => ({
    ...LIMITS,
    onFlush: (size) => sizes.observe({ call }, size),
  });

  const admits = new Batcher<Timed<AdmitRequest>, admissionv1.AdmitResponse>(async (items) => {
    const timeoutMs = remaining(items);
    if (timeoutMs <= 0) return items.map(expired);
    const res = await upstreams.admission.admitMany(
      { requests: items.map((i) => create(admissionv1.AdmitRequestSchema, i.value)) },
      { timeoutMs },
    );
    return res.results.map((r) =>
      r.result.case === 'admitted'
        ? r.result.value
        : r.result.case === 'error'
          ? errorOfRpcStatus(r.result.value)
          : new ConnectError('admission answered nothing for a request', Code.Internal),
    );
  }, options('admit'));

  const completes = new Batcher<Timed<string>, void>(async (items) => {
    const timeoutMs = remaining(items);
    if (timeoutMs <= 0) return items.map(expired);
    const res = await upstreams.admission.completeMany(
      { requests: items.map((i) => ({ admissionId: i.value })) },
      { timeoutMs },
    );
    return res.results.map((r) =>
      r.result.case === 'completed'
        ? undefined
        : r.result.case === 'error'
          ? errorOfRpcStatus(r.result.value)
          : new ConnectError('admission answered nothing for a request', Code.Internal),
    );
  }, options('complete'));

  // One batcher per adapter address (and country).
  const checks = new Map<string, Batcher<Timed<readonly string[]>, registryv1.CheckResponse>>();
  function checkBatcher(address: string, country: string) {
    const key = `${country} ${address}`;
    let batcher = checks.get(key);
    if (!batcher) {
      batcher = sharedChecks(upstreams, address, country, options('check'));
      checks.set(key, batcher);
    }
    return batcher;
  }

  return {
    admit: (request, timeoutMs) => admits.submit({ value: request, deadline: Date.now() + timeoutMs }),
    complete: (admissionId, timeoutMs) =>
      completes.submit({ value: admissionId, deadline: Date.now() + timeoutMs }),
    check(address, country, phones, timeoutMs) {
      if (phones.length > CHECK_SHARE_MAX_INPUTS) {
        return upstreams.adapter(address).check(checkRequest(country, phones), { timeoutMs });
      }
      return checkBatcher(address, country).submit({ value: phones, deadline: Date.now() + timeoutMs });
    },
  };
}

/**
 * Checks of one adapter and country that share calls: the phones of a batch go in one Check, in order,
 * and each request takes back its own slice of the outcomes.
 */
function sharedChecks(
  upstreams: UpstreamClients,
  address: string,
  country: string,
  options: BatcherOptions,
): Batcher<Timed<readonly string[]>, registryv1.CheckResponse> {
  return new Batcher<Timed<readonly string[]>, registryv1.CheckResponse>(async (items) => {
    const timeoutMs = remaining(items);
    if (timeoutMs <= 0) return items.map(expired);
    const phones = items.length === 1 ? items[0]!.value : items.flatMap((i) => i.value);
    const answer = await upstreams.adapter(address).check(checkRequest(country, phones), { timeoutMs });
    if (answer.outcomes.length !== phones.length)
      throw new ConnectError('the adapter answered the wrong number of outcomes', Code.Internal);
    if (items.length === 1) return [answer];
    let offset = 0;
    return items.map((i) => {
      const outcomes = answer.outcomes.slice(offset, offset + i.value.length);
      offset += i.value.length;
      return { ...answer, outcomes };
    });
  }, options);
}
