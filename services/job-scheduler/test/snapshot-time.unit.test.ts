import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import {
  type AdapterDirectory,
  type AdapterEntry,
  CheckResponseWireSchema,
  PHONE_LIST_HEADER,
} from '@dnc/kit';
import { registryv1 } from '@dnc/proto';
import { describe, expect, it } from 'vitest';
import { type AdapterClients, executeUnits } from '../src/worker/execute.js';

// Found by a review (2026-12-03): a unit answered with safe/prohibited outcomes but no snapshot_time (a
// third-party adapter; ours always names one) was passed over, so the result's X-Registry-Snapshot-At was
// the oldest of the other units': fresher than the result really is. Such a unit now makes it unknown
// (null: the header is left out), while a unit of invalid inputs only (nothing read) still names none.
const { Outcome } = registryv1;
const entry = { country: 'mx', address: 'http://127.0.0.1:1', status: 'serving' } as AdapterEntry;
const directory = { pick: () => entry, instances: () => [entry] } as unknown as AdapterDirectory;

const answer = (outcome: registryv1.Outcome, time?: Date) =>
  fromBinary(
    CheckResponseWireSchema,
    toBinary(
      registryv1.CheckResponseSchema,
      create(registryv1.CheckResponseSchema, {
        outcomes: [outcome],
        ...(time ? { snapshotTime: timestampFromDate(time) } : {}),
      }),
    ),
  );

async function snapshotsOf(answers: ReturnType<typeof answer>[]) {
  let call = 0;
  const clients = (() => ({
    check: async (_req: unknown, opts: { onHeader?: (h: Headers) => void }) => {
      opts.onHeader?.(new Headers({ [PHONE_LIST_HEADER]: '1' }));
      return answers[call++];
    },
  })) as unknown as AdapterClients;
  const seen: (Date | null | undefined)[] = [];
  await executeUnits(
    'mx',
    answers.map((_, i) => String(i)),
    directory,
    clients,
    {
      beginCall: async () => 'go',
      endCall: async () => 'go',
      signal: new AbortController().signal,
      stopReason: () => 'shutdown',
      onSnapshot: (t) => seen.push(t),
    },
    { unitSize: 1, concurrency: 1, retries: 0, callTimeoutMs: 5_000 },
  );
  return seen;
}

describe("each unit's snapshot time, as executeUnits reports it", () => {
  it('the time named; none for a unit of invalid inputs; unknown (null) for registry outcomes without one', async () => {
    const at = new Date('2026-11-01T00:00:00Z');
    expect(
      await snapshotsOf([
        answer(Outcome.SAFE, at),
        answer(Outcome.INVALID_LENGTH),
        answer(Outcome.PROHIBITED),
        answer(Outcome.SAFE),
      ]),
    ).toEqual([at, undefined, null, null]);
  });
});
