import { randomUUID } from 'node:crypto';
import { checkInvariants, formatViolations } from '@dnc/devstack';
import { admissionv1 } from '@dnc/proto';
import { afterEach, describe, expect, it } from 'vitest';
import { outcome, startedHarness } from './harness.js';

const h = startedHarness();

afterEach(async () => {
  const violations = await checkInvariants({ databaseUrl: h.databaseUrl }, { settleMs: 5_000 });
  expect(violations, formatViolations(violations)).toEqual([]);
});

const fp = (version: string, seed: string) =>
  `${version}:${Buffer.from(seed.padEnd(32, '.')).toString('hex').slice(0, 64).padEnd(64, '0')}`;

/** A v1 admission of a new customer under a new idempotency key, its fingerprint to add. */
async function syncRequest(inputCount: number) {
  const c = await h.customer(['mx']);
  return {
    orgId: c.orgId,
    keyId: c.keyId,
    country: 'mx',
    idempotencyKey: randomUUID(),
    inputCount,
    kind: admissionv1.RequestKind.SYNC,
  };
}

describe('issue 14 item 4: a fingerprint secret rotation never turns other phones into a free replay', () => {
  it('a completed v1 key, then the secret rotated: other phones are reused, the exact retry replays', async () => {
    const { admission } = h.clients();
    const base = await syncRequest(10);
    const first = await admission.admit({ ...base, fingerprint: fp('v1', 'phones A') });
    await admission.complete({ admissionId: first.admissionId });

    // The gateways now fingerprint with v2 and, during the rotation, with v1 as well.
    const other = {
      ...base,
      fingerprint: fp('v2', 'phones B'),
      previousFingerprints: [fp('v1', 'phones B')],
    };
    expect(await outcome(admission.admit(other))).toBe('idempotency_key_reused');
    // A gateway that no longer computes the old version cannot prove it is the same request.
    expect(await outcome(admission.admit({ ...base, fingerprint: fp('v2', 'phones A') }))).toBe(
      'idempotency_key_reused',
    );
    const exact = {
      ...base,
      fingerprint: fp('v2', 'phones A'),
      previousFingerprints: [fp('v1', 'phones A')],
    };
    const replay = await admission.admit(exact);
    expect(replay.replay).toBe(true);
    expect(await h.account(base.orgId, 'mx')).toMatchObject({ used: 10, reserved: 0 });
  });

  // The two rollouts of docs/deploy.md ("Fingerprint secret: rotation in two rollouts"): during the second,
  // a key stored by a gateway already on v2 is retried through one still on v1 that knows v2 beside it.
  it('during a rotation, a key stored under the new version replays through a gateway still on the old one', async () => {
    const { admission } = h.clients();
    const base = await syncRequest(4);
    const first = await admission.admit({
      ...base,
      fingerprint: fp('v2', 'phones C'),
      previousFingerprints: [fp('v1', 'phones C')],
    });
    await admission.complete({ admissionId: first.admissionId });
    const replay = await admission.admit({
      ...base,
      fingerprint: fp('v1', 'phones C'),
      previousFingerprints: [fp('v2', 'phones C')],
    });
    expect(replay.replay).toBe(true);
    expect(
      await outcome(
        admission.admit({
          ...base,
          fingerprint: fp('v1', 'phones D'),
          previousFingerprints: [fp('v2', 'phones D')],
        }),
      ),
    ).toBe('idempotency_key_reused');
    expect(await h.account(base.orgId, 'mx')).toMatchObject({ used: 4, reserved: 0 });
  });
});
