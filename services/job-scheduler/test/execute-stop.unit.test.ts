import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import {
  type AdapterDirectory,
  type AdapterEntry,
  CheckResponseWireSchema,
  PHONE_LIST_HEADER,
} from '@dnc/kit';
import { registryv1 } from '@dnc/proto';
import { describe, expect, it } from 'vitest';
import {
  type AdapterClients,
  type ExecutionHooks,
  ExecutionStopped,
  executeUnits,
} from '../src/worker/execute.js';
import { StreamedInputs } from '../src/worker/input.js';

// Issue 14 item 7: when one of a job's concurrent unit runners cannot record its next call (beginCall
// rejects: PostgreSQL unreachable), the attempt ends, and nothing of it may keep calling the adapter
// afterwards: the sibling's call in flight is aborted and no further unit starts. Before, the rejection
// ended the attempt at once while the sibling carried on through the remaining units. The e2e
// counterpart with a real PostgreSQL reset is test/e2e/worker-lease-loss.e2e.test.ts.

const entry: AdapterEntry = {
  country: 'mx',
  instance_id: 'a',
  address: 'http://127.0.0.1:1',
  version: '1',
  status: 'serving',
  snapshot_id: 's',
  registry_size: 1,
  updated_at: new Date().toISOString(),
};
const directory = { pick: () => entry, instances: () => [entry] } as unknown as AdapterDirectory;

/** An adapter's answer of one SAFE outcome, as the worker's client reads it (kit RegistryAdapterCheck). */
const safeAnswer = fromBinary(
  CheckResponseWireSchema,
  toBinary(
    registryv1.CheckResponseSchema,
    create(registryv1.CheckResponseSchema, { outcomes: [registryv1.Outcome.SAFE] }),
  ),
);

/** An adapter whose every call takes `ms`, honours its abort signal, and records when calls run. */
function slowAdapter(ms: number) {
  const log: { started: number; finished?: number; aborted?: boolean }[] = [];
  const clients = (() => ({
    check: (_req: unknown, opts: { signal: AbortSignal; onHeader?: (h: Headers) => void }) =>
      new Promise((resolve, reject) => {
        const call: (typeof log)[number] = { started: performance.now() };
        log.push(call);
        const t = setTimeout(() => {
          call.finished = performance.now();
          // An adapter that reads phone_list says so (kit checkAt), else each call is sent twice.
          opts.onHeader?.(new Headers({ [PHONE_LIST_HEADER]: '1' }));
          resolve(safeAnswer);
        }, ms);
        opts.signal.addEventListener('abort', () => {
          clearTimeout(t);
          call.aborted = true;
          reject(opts.signal.reason);
        });
      }),
  })) as unknown as AdapterClients;
  return { log, clients };
}

const options = { unitSize: 1, concurrency: 2, retries: 0, callTimeoutMs: 5_000 };

/** Hooks under which every call may go (no cancel, no lost lease). */
const goOn = (): ExecutionHooks => ({
  beginCall: async () => 'go',
  endCall: async () => 'go',
  signal: new AbortController().signal,
  stopReason: () => 'shutdown',
});

describe('executeUnits when a runner stops the attempt', () => {
  it('a beginCall that rejects ends the attempt and stops the sibling call in flight', async () => {
    const { log, clients } = slowAdapter(300);
    let begins = 0;
    const lost = new Error('Connection terminated unexpectedly');
    const run = executeUnits(
      'mx',
      ['1', '2', '3', '4', '5', '6'],
      directory,
      clients,
      {
        beginCall: async () => {
          begins++;
          // The second runner's first begin is delayed so its call is in flight when the first
          // runner's second begin fails.
          if (begins === 2) await new Promise((r) => setTimeout(r, 100));
          if (begins === 3) throw lost;
          return 'go';
        },
        endCall: async () => 'go',
        signal: new AbortController().signal,
        stopReason: () => 'shutdown',
      },
      options,
    ).catch((e: unknown) => e);
    const error = await run;
    const endedAt = performance.now();
    expect(error).toBe(lost);
    await new Promise((r) => setTimeout(r, 800));
    // No call started after the attempt ended, none finished after it: the sibling's was aborted.
    expect(log.filter((c) => c.started > endedAt)).toEqual([]);
    expect(log.filter((c) => (c.finished ?? 0) > endedAt)).toEqual([]);
    expect(log.some((c) => c.aborted)).toBe(true);
  });

  it('a unit that fails for good stops the sibling call in flight too', async () => {
    const { log, clients } = slowAdapter(400);
    let calls = 0;
    const failing = ((address: string, country: string) => {
      const inner = clients(address, country);
      return {
        check: (req: unknown, opts: { signal: AbortSignal }) =>
          ++calls === 2
            ? new Promise((_, reject) =>
                setTimeout(
                  () =>
                    reject(
                      new ConnectError(
                        'invalid',
                        Code.InvalidArgument,
                        new Headers({ [PHONE_LIST_HEADER]: '1' }),
                      ),
                    ),
                  50,
                ),
              )
            : inner.check(req as never, opts),
      };
    }) as unknown as AdapterClients;
    const error = await executeUnits('mx', ['1', '2', '3', '4'], directory, failing, goOn(), options).catch(
      (e: unknown) => e,
    );
    const endedAt = performance.now();
    expect(error).not.toBeInstanceOf(ExecutionStopped);
    expect(error).toBeInstanceOf(Error);
    await new Promise((r) => setTimeout(r, 600));
    expect(log.filter((c) => c.started > endedAt)).toEqual([]);
    // The sibling's call was aborted instead of being waited for.
    expect(log.some((c) => c.aborted)).toBe(true);
  });

  it('an input that cannot be read to its end ends the attempt with that error; no unit calls out after', async () => {
    const { log, clients } = slowAdapter(50);
    const phones = ['1', '2', '3', '4', '5', '6'];
    const lost = new Error('Connection terminated unexpectedly');
    async function* segments() {
      yield Buffer.from('["1","2","3');
      // The first units run while the rest is read; then the read fails.
      await new Promise((r) => setTimeout(r, 120));
      throw lost;
    }
    const error = await executeUnits(
      'mx',
      new StreamedInputs(phones.length, segments(), new AbortController().signal),
      directory,
      clients,
      goOn(),
      options,
    ).catch((e: unknown) => e);
    const endedAt = performance.now();
    expect(error).toBe(lost);
    // Units 1 and 2 were called before the input was whole; none of the phones not read was.
    expect(log.length).toBe(2);
    await new Promise((r) => setTimeout(r, 200));
    expect(log.filter((c) => c.started > endedAt)).toEqual([]);
  });
});

describe('executeUnits renders each unit as it is answered (onUnitAnswered)', () => {
  it('hands each answered unit its own phones and outcomes once, then releases them from the input', async () => {
    const { clients } = slowAdapter(20);
    const phones = ['1', '2', '3', '4', '5'];
    const input = new StreamedInputs(
      phones.length,
      (async function* () {
        yield Buffer.from(JSON.stringify(phones));
      })(),
      new AbortController().signal,
    );
    const seen: { from: number; phones: readonly string[]; outcomes: number[] }[] = [];
    await executeUnits(
      'mx',
      input,
      directory,
      clients,
      {
        ...goOn(),
        onUnitAnswered: (from, unit, outcomes) => {
          seen.push({ from, phones: unit.strings(), outcomes: [...outcomes] });
        },
      },
      options,
    );
    expect(seen.map((s) => s.from).sort()).toEqual([0, 1, 2, 3, 4]);
    for (const s of seen) {
      expect(s.phones).toEqual([phones[s.from]]);
      expect(s.outcomes).toEqual([registryv1.Outcome.SAFE]);
    }
    // Rendered units are not held twice: the input let their phones go, and still holds its count.
    await input.complete();
    expect(() => input.slice(0, 1)).toThrow('released');
    expect(() => input.slice(4, 5)).toThrow('released');
  });

  it('a unit that cannot be rendered fails the attempt as a platform failure; no unit calls out after', async () => {
    const { log, clients } = slowAdapter(20);
    const error = await executeUnits(
      'mx',
      ['1', '2', '3', '4', '5', '6'],
      directory,
      clients,
      {
        ...goOn(),
        onUnitAnswered: () => {
          throw new Error('inconclusive outcome');
        },
      },
      options,
    ).catch((e: unknown) => e);
    const endedAt = performance.now();
    expect(error).toMatchObject({ failure: { kind: 'platform' } });
    await new Promise((r) => setTimeout(r, 100));
    expect(log.filter((c) => c.started > endedAt)).toEqual([]);
    expect(log.length).toBeLessThanOrEqual(2);
  });
});

describe('executeUnits and a cancel accepted during a failing call', () => {
  // Found by a review (2026-12-03): spec, a cancel "while an external registry call is in progress" leaves
  // the job running "until the call outcome is reconciled, then cancelled". A unit whose call failed was
  // tried again (up to `retries` more calls, each up to the call timeout) before the pending cancel was
  // looked at; the failed call's outcome is known, so the cancel now applies before any new call.
  it('a cancel accepted while a call fails is applied before the call is tried again', async () => {
    let calls = 0;
    const unavailable = (() => ({
      check: () => {
        calls++;
        return Promise.reject(new ConnectError('down', Code.Unavailable));
      },
    })) as unknown as AdapterClients;
    let asked = 0;
    const hooks: ExecutionHooks = {
      ...goOn(),
      beforeRetry: async () => {
        asked++;
        return 'cancel';
      },
    };
    const retrying = { ...options, concurrency: 1, retries: 3, sleep: async () => {} };
    const error = await executeUnits('mx', ['1'], directory, unavailable, hooks, retrying).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ExecutionStopped);
    expect((error as ExecutionStopped).reason).toBe('cancel');
    expect([calls, asked]).toEqual([1, 1]);
    // Without a pending cancel the unit is tried again, as before.
    calls = 0;
    const go = { ...goOn(), beforeRetry: async () => 'go' as const };
    await executeUnits('mx', ['1'], directory, unavailable, go, retrying).catch(() => undefined);
    expect(calls).toBe(4);
  });
});
