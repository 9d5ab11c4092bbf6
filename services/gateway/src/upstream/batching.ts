import { create } from '@bufbuild/protobuf';
import {
  Batcher,
  type BatcherOptions,
  type CheckAnswer,
  Code,
  ConnectError,
  checkAt,
  errorOfRpcStatus,
  Histogram,
  type Registry,
} from '@dnc/kit';
import { admissionv1 } from '@dnc/proto';
import type { AdmitRequest, Upstream } from '../flows/port.js';
import { BodyPhones } from '../flows/scrub-body.js';
import type { UpstreamClients } from './clients.js';

/**
 * How the hot internal calls of a scrub travel: batched across the requests in flight. The Admit,
 * Check and Complete calls that arrive while one of the same kind is on the wire go together in the
 * next one (kit Batcher: a lone call leaves at once). One internal round trip then serves many public
 * requests, which is what lets one gateway and one admission carry thousands of single-number scrubs a
 * second (scripts/bench/README.md). Each request keeps its own answer, its own error and its own
 * deadline: a request never fails because of another member's (issue 14 item 5). A member already past
 * its deadline when the batch leaves fails alone and is not sent; the call carries the latest deadline
 * of the others, and each member still fails at its own deadline if the answer is later (`ownDeadline`).
 */
export type BatchedCalls = Pick<Upstream, 'admit' | 'check' | 'complete'>;

/** A Check of at most this many inputs may share an adapter call with others; larger ones go alone. */
export const CHECK_SHARE_MAX_INPUTS = 256;
const LIMITS = { maxBatch: 64, maxInFlight: 4, sameTurn: true };

interface Timed<T> {
  value: T;
  deadline: number;
}

function expired(): ConnectError {
  return new ConnectError('deadline exceeded before the call was sent', Code.DeadlineExceeded);
}

/**
 * Send the members of a batch still within their deadline, with the latest of their deadlines; the
 * others fail alone (DeadlineExceeded). Each answer goes back to its member's place.
 */
async function sendLive<T, R>(
  items: Timed<T>[],
  send: (live: Timed<T>[], timeoutMs: number) => Promise<(R | Error)[]>,
): Promise<(R | Error)[]> {
  const now = Date.now();
  const live = items.filter((i) => i.deadline > now);
  if (live.length === 0) return items.map(expired);
  const answers = await send(live, Math.max(...live.map((i) => i.deadline)) - now);
  let next = 0;
  return items.map((i) => (i.deadline > now ? answers[next++]! : expired()));
}

/** A member's answer, or DeadlineExceeded at its own deadline when the batch answers later. */
function ownDeadline<R>(answer: Promise<R>, deadline: number): Promise<R> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new ConnectError('the answer did not come within the deadline', Code.DeadlineExceeded)),
      Math.max(0, deadline - Date.now()),
    );
  });
  return Promise.race([answer, late]).finally(() => clearTimeout(timer));
}

/**
 * A member's call through its batch. A member that gave up is still answered by its batch: that answer
 * goes to `late` (to undo what it did for nobody), an error is dropped.
 */
function submitTimed<T, R>(
  batcher: Batcher<Timed<T>, R>,
  value: T,
  timeoutMs: number,
  late?: (answer: R) => void,
): Promise<R> {
  const deadline = Date.now() + timeoutMs;
  const answer = batcher.submit({ value, deadline });
  let gaveUp = false;
  answer.then(
    (r) => {
      if (gaveUp) late?.(r);
    },
    () => {},
  );
  return ownDeadline(answer, deadline).catch((error: unknown) => {
    gaveUp = true;
    throw error;
  });
}

/** How long the undo of an admission whose caller gave up may take (it is waited for by nobody). */
const LATE_ABORT_MS = 2_000;

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

  const admits = new Batcher<Timed<AdmitRequest>, admissionv1.AdmitResponse>(
    (items) =>
      sendLive(items, async (live, timeoutMs) => {
        const res = await upstreams.admission.admitMany(
          { requests: live.map((i) => create(admissionv1.AdmitRequestSchema, i.value)) },
          { timeoutMs },
        );
        return res.results.map((r) =>
          r.result.case === 'admitted'
            ? r.result.value
            : r.result.case === 'error'
              ? errorOfRpcStatus(r.result.value)
              : new ConnectError('admission answered nothing for a request', Code.Internal),
        );
      }),
    options('admit'),
  );

  const completes = new Batcher<Timed<string>, void>(
    (items) =>
      sendLive(items, async (live, timeoutMs) => {
        // Each member's own deadline goes with it (the call carries the latest one): admission commits
        // none whose request has given up, which would charge the customer for the error it answered.
        // Also as the moment itself: time the call spends on its way does not stretch that one.
        const now = Date.now();
        const res = await upstreams.admission.completeMany(
          {
            requests: live.map((i) => ({
              admissionId: i.value,
              timeoutMs: Math.max(1, i.deadline - now),
              deadlineUnixMs: BigInt(Math.ceil(i.deadline)),
            })),
          },
          { timeoutMs },
        );
        return res.results.map((r) =>
          r.result.case === 'completed'
            ? undefined
            : r.result.case === 'error'
              ? errorOfRpcStatus(r.result.value)
              : new ConnectError('admission answered nothing for a request', Code.Internal),
        );
      }),
    options('complete'),
  );

  // One batcher per adapter address (and country).
  const checks = new Map<string, Batcher<Timed<readonly string[]>, CheckAnswer>>();
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
    // A v1 admission answered after its request gave up is undone at once, as admission undoes a single
    // Admit whose caller gave up (a batch's call lives on for its other members): not held for nobody until
    // the reconciler. A replay reserved nothing. Not a v2 one: it may be the resume of an earlier claim
    // whose job is stored, and its reservation that job's; the claim reconciler fences the job first.
    admit: (request, timeoutMs) =>
      submitTimed(admits, request, timeoutMs, (admitted) => {
        if (request.kind !== admissionv1.RequestKind.SYNC || admitted.replay || !admitted.admissionId) return;
        upstreams.admission
          .abort({ admissionId: admitted.admissionId }, { timeoutMs: LATE_ABORT_MS })
          .catch(() => {});
      }),
    complete: (admissionId, timeoutMs) => submitTimed(completes, admissionId, timeoutMs),
    check(address, country, phones, timeoutMs) {
      if (phones.length > CHECK_SHARE_MAX_INPUTS) {
        // A body's phones go as its bytes: never made strings, copied once into the request.
        const list = phones instanceof BodyPhones ? phones.phoneList() : phones;
        return checkAt(upstreams.adapter(address, country), country, list, { timeoutMs });
      }
      const list = phones instanceof BodyPhones ? phones.strings() : phones;
      return submitTimed(checkBatcher(address, country), list, timeoutMs);
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
): Batcher<Timed<readonly string[]>, CheckAnswer> {
  return new Batcher<Timed<readonly string[]>, CheckAnswer>(
    (items) =>
      sendLive(items, async (live, timeoutMs) => {
        const phones = live.length === 1 ? live[0]!.value : live.flatMap((i) => i.value);
        const answer = await checkAt(upstreams.adapter(address, country), country, phones, { timeoutMs });
        if (answer.outcomes.length !== phones.length)
          throw new ConnectError('the adapter answered the wrong number of outcomes', Code.Internal);
        if (live.length === 1) return [answer];
        let offset = 0;
        return live.map((i) => {
          const outcomes = answer.outcomes.subarray(offset, offset + i.value.length);
          offset += i.value.length;
          return { ...answer, outcomes };
        });
      }),
    options,
  );
}
