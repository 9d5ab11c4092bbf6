import { Code } from '@dnc/kit';
import { registryv1 } from '@dnc/proto';
import { describe, expect, it } from 'vitest';
import type { ScrubRequest } from '../src/flows/admit.js';
import { EarlyChecks } from '../src/flows/early-check.js';
import { scrubV1 } from '../src/flows/v1-scrub.js';
import {
  budget,
  fingerprint,
  inMemoryUpstream,
  refusal,
  type Script,
  sleep,
  unavailable,
} from './support/upstream.js';

// Issue 18: a v1 request's adapter Check beside Admit, for a key admitted a moment ago. The answers,
// the charge and the check order stay those of the sequential flow (v1-scrub-flow.unit.test.ts).

const deferred = (apiKey: string) =>
  ({ kind: 'deferred', credentials: { apiKey, clientAddress: '127.0.0.1' } }) as const;

function request(key: string, apiKey = 'dnc_live_key'): ScrubRequest {
  return { caller: deferred(apiKey), idempotencyKey: key, country: 'mx', phones: ['5512345678'] };
}

/**
 * A flow whose Admit answers after 30 ms and notes whether the Check was already sent by then. Its
 * adapter answers from a local registry copy (lookups free) unless `extra.admit` says otherwise.
 */
function slowAdmit(extra: Script = {}) {
  const seenBeforeAdmitAnswered: boolean[] = [];
  const u = inMemoryUpstream({
    ...extra,
    admit: async (req) => {
      await sleep(30);
      // This request's Check was sent already when there are more Checks than Admits answered before.
      const checks = u.calls.filter((c) => c.startsWith('check')).length;
      seenBeforeAdmitAnswered.push(checks > seenBeforeAdmitAnswered.length);
      return extra.admit ? extra.admit(req) : { adapterLookupsFree: true };
    },
  });
  const early = new EarlyChecks({ ttlMs: 10_000, maxInFlight: 2, maxKeys: 100 });
  const deps = { upstream: u.upstream, fingerprint, log: u.log, early };
  return { u, deps, early, seenBeforeAdmitAnswered };
}

describe('the early Check (issue 18)', () => {
  it('a key never admitted waits for Admit; once admitted, its next Check goes out beside Admit', async () => {
    const { u, deps, seenBeforeAdmitAnswered } = slowAdmit();
    const first = await scrubV1(deps, request('k1'), budget());
    const second = await scrubV1(deps, request('k2'), budget());
    expect(first).toMatchObject({ ok: true });
    expect(second).toMatchObject({ ok: true });
    expect(seenBeforeAdmitAnswered).toEqual([false, true]);
    expect(u.calls.filter((c) => c.startsWith('check'))).toHaveLength(2);
    expect(u.calls.filter((c) => c.startsWith('complete'))).toHaveLength(2);
  });

  it('another key gets none: admission of one key says nothing about another', async () => {
    const { deps, seenBeforeAdmitAnswered } = slowAdmit();
    await scrubV1(deps, request('k1', 'dnc_live_one'), budget());
    await scrubV1(deps, request('k2', 'dnc_live_two'), budget());
    expect(seenBeforeAdmitAnswered).toEqual([false, false]);
  });

  it('a refused Admit answers its refusal (the early answer is dropped unread); the key then waits for Admit', async () => {
    let refuse = false;
    const { u, deps, seenBeforeAdmitAnswered } = slowAdmit({
      admit: () =>
        refuse ? refusal(Code.ResourceExhausted, 'customer_quota_exceeded') : { adapterLookupsFree: true },
    });
    await scrubV1(deps, request('k1'), budget());
    refuse = true;
    const refused = await scrubV1(deps, request('k2'), budget());
    expect(refused).toMatchObject({
      ok: false,
      error: { status: 429, body: { error: 'customer_quota_exceeded' } },
    });
    expect(refused).not.toHaveProperty('body');
    refuse = false;
    await scrubV1(deps, request('k3'), budget());
    expect(seenBeforeAdmitAnswered).toEqual([false, true, false]);
    // Nothing was completed or aborted for the refused request.
    expect(u.calls.filter((c) => c.startsWith('complete'))).toHaveLength(2);
    expect(u.calls.filter((c) => c.startsWith('abort'))).toHaveLength(0);
  });

  it('a failed early Check is checked again after Admit, at the adapter admission chose', async () => {
    let checks = 0;
    const { u, deps } = slowAdmit({
      admit: () => ({ adapterLookupsFree: true }),
      check: () => (++checks === 2 ? unavailable() : [registryv1.Outcome.PROHIBITED]),
    });
    await scrubV1(deps, request('k1'), budget());
    const second = await scrubV1(deps, request('k2'), budget());
    expect(second).toMatchObject({ ok: true });
    expect(JSON.parse((second as { body: Buffer }).body.toString('utf8')).prohibited_numbers_to_call).toEqual(
      ['5512345678'],
    );
    expect(u.calls.filter((c) => c.startsWith('check'))).toHaveLength(3);
  });

  it('at most maxInFlight early Checks of one key at a time', async () => {
    const { deps, early } = slowAdmit();
    await scrubV1(deps, request('k0'), budget());
    const slots = [early.begin(request('a')), early.begin(request('b')), early.begin(request('c'))];
    expect(slots.map((s) => s !== undefined)).toEqual([true, true, false]);
    slots[0]!.release();
    slots[0]!.release();
    expect(early.begin(request('d'))).toBeDefined();
    expect(early.begin(request('e'))).toBeUndefined();
  });

  it('a country whose adapter bills lookups (a remote registry) is checked only after Admit admitted', async () => {
    // Admission chose an adapter without free lookups: every request of the key waits for Admit, so a
    // request admission refuses never spends a paid lookup (nor sends its numbers to the registry).
    let refuse = false;
    let free = false;
    const { u, deps, early } = slowAdmit({
      admit: () =>
        refuse ? refusal(Code.ResourceExhausted, 'customer_quota_exceeded') : { adapterLookupsFree: free },
    });
    // Which requests had their Check sent before Admit answered.
    const sentEarly: boolean[] = [];
    const begin = early.begin.bind(early);
    early.begin = (r) => {
      const slot = begin(r);
      sentEarly.push(slot !== undefined);
      return slot;
    };
    await scrubV1(deps, request('k1'), budget());
    await scrubV1(deps, request('k2'), budget());
    refuse = true;
    const refused = await scrubV1(deps, request('k3'), budget());
    expect(refused).toMatchObject({ ok: false, error: { status: 429 } });
    expect(sentEarly).toEqual([false, false, false]);
    // Two admitted requests, two lookups; none for the refused one.
    expect(u.calls.filter((c) => c.startsWith('check'))).toHaveLength(2);

    // The country's adapter turns local: early again. Then admission picks a remote one: no longer.
    refuse = false;
    free = true;
    await scrubV1(deps, request('k4'), budget());
    await scrubV1(deps, request('k5'), budget());
    free = false;
    await scrubV1(deps, request('k6'), budget());
    await scrubV1(deps, request('k7'), budget());
    // k6 still goes early, to the local adapter of k5's admission (free); its Admit chose a remote one.
    expect(sentEarly.slice(3)).toEqual([false, true, true, false]);
    expect(u.calls.filter((c) => c.startsWith('check'))).toHaveLength(6);
  });

  it('forgets an admission after its time to live', async () => {
    let now = 0;
    const early = new EarlyChecks({ ttlMs: 1_000, maxInFlight: 8, maxKeys: 100 }, undefined, () => now);
    early.admitted(request('k1'), 'http://adapter:1', true);
    expect(early.begin(request('k2'))?.address).toBe('http://adapter:1');
    now = 1_001;
    expect(early.begin(request('k3'))).toBeUndefined();
  });
});
