import { randomUUID } from 'node:crypto';
import { checkInvariants, formatViolations } from '@dnc/devstack';
import { admissionv1 } from '@dnc/proto';
import { afterEach, describe, expect, it } from 'vitest';
import { admitReq, outcome, startedHarness } from './harness.js';

const _SYNC = admissionv1.RequestKind.SYNC;
const h = startedHarness();

/** After every fault test: the ledger and the claims as the invariant checker reads them. */
afterEach(async () => {
  const violations = await checkInvariants({ databaseUrl: h.databaseUrl }, { settleMs: 5_000 });
  expect(violations, formatViolations(violations)).toEqual([]);
});

/**
 * PostgreSQL refuses to mark a claim completed (a real trigger, as a failing disk or a constraint
 * would): the quota commit of Complete goes through, its second half does not.
 */
async function refuseCompletion(): Promise<() => Promise<void>> {
  const name = `refuse_completed_${randomUUID().replaceAll('-', '')}`;
  await h.sql(`CREATE FUNCTION admission.${name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'completion refused by the test'; END $$`);
  await h.sql(`CREATE TRIGGER ${name} BEFORE UPDATE ON admission.idempotency_records
    FOR EACH ROW WHEN (NEW.state = 'completed') EXECUTE FUNCTION admission.${name}()`);
  return async () => {
    await h.sql(`DROP TRIGGER ${name} ON admission.idempotency_records`);
    await h.sql(`DROP FUNCTION admission.${name}()`);
  };
}

async function claimState(admissionId: string): Promise<string | undefined> {
  const r = await h.sql('SELECT state FROM admission.idempotency_records WHERE admission_id = $1', [
    admissionId,
  ]);
  return r.rows[0]?.state as string | undefined;
}

async function usageRecords(orgId: string): Promise<number> {
  const r = await h.sql('SELECT count(*)::int AS n FROM quota.usage_records WHERE org_id = $1', [orgId]);
  return r.rows[0].n as number;
}

describe('issue 14 item 3: a v1 request committed but not marked completed is charged once', () => {
  it('admit, commit, the completion fails, abort, admit again: a free replay, one usage record', async () => {
    const { admission } = h.clients();
    const c = await h.customer(['mx']);
    const req = admitReq(c);
    const first = await admission.admit(req);
    const allow = await refuseCompletion();
    try {
      // The commit is done and only the claim's mark failed: Complete answers completed (the request is
      // charged, so its caller answers its result; 2026-12-05, it answered an error and the gateway 503).
      expect(await outcome(admission.complete({ admissionId: first.admissionId }))).toBe('ok');
      expect(await claimState(first.admissionId)).toBe('in_progress');
    } finally {
      await allow();
    }
    expect(await usageRecords(c.orgId)).toBe(1);
    // An abort (a gateway whose Complete answer was lost) says the request was completed.
    expect(await admission.abort({ admissionId: first.admissionId })).toMatchObject({ completed: true });
    expect(await admission.abort({ admissionId: first.admissionId })).toMatchObject({ completed: true });

    // The client's retry of the same request: the request was completed, so it replays for free.
    const retry = await admission.admit(req);
    expect(retry.replay).toBe(true);
    expect(retry.admissionId).toBe(first.admissionId);
    expect(await usageRecords(c.orgId)).toBe(1);
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: 10, reserved: 0 });
  });

  it('an abort that cannot mark the claim leaves it for the retry, which replays for free', async () => {
    const { admission } = h.clients();
    const c = await h.customer(['mx']);
    const req = admitReq(c, { inputCount: 7 });
    const first = await admission.admit(req);
    const allow = await refuseCompletion();
    try {
      expect(await outcome(admission.complete({ admissionId: first.admissionId }))).toBe('ok');
      // The abort (a gateway whose Complete answer was lost) learns the reservation was committed but cannot mark the claim either: it fails,
      // and the claim is kept (never dropped while its charge stands).
      expect(await outcome(admission.abort({ admissionId: first.admissionId }))).not.toBe('ok');
    } finally {
      await allow();
    }
    const claim = await h.sql('SELECT state FROM admission.idempotency_records WHERE admission_id = $1', [
      first.admissionId,
    ]);
    expect(claim.rows).toEqual([{ state: 'in_progress' }]);
    await admission.abort({ admissionId: first.admissionId });
    const retry = await admission.admit(req);
    expect(retry.replay).toBe(true);
    expect(await usageRecords(c.orgId)).toBe(1);
  });
});

describe('issue 14 item 1: the claim reconciler resolves v1 claims their gateway left behind', () => {
  it('committed but never marked (the gateway died after the commit): completed, a retry replays free', async () => {
    const { admission } = h.clients();
    const c = await h.customer(['mx']);
    const req = admitReq(c, { inputCount: 5 });
    const first = await admission.admit(req);
    const allow = await refuseCompletion();
    try {
      expect(await outcome(admission.complete({ admissionId: first.admissionId }))).toBe('ok');
    } finally {
      await allow();
    }
    // No abort ever comes. Past DNC_SYNC_CLAIM_TIMEOUT_SECONDS (the database clock moved back, not mocked):
    await h.sql(
      "UPDATE admission.idempotency_records SET claimed_at = now() - interval '1 minute' WHERE admission_id = $1",
      [first.admissionId],
    );
    const done = await h.instances[0]!.reconciler.reconcileOnce();
    expect(done.completed).toBeGreaterThanOrEqual(1);
    const claim = await h.sql('SELECT state FROM admission.idempotency_records WHERE admission_id = $1', [
      first.admissionId,
    ]);
    expect(claim.rows).toEqual([{ state: 'completed' }]);
    const retry = await admission.admit(req);
    expect(retry.replay).toBe(true);
    expect(await usageRecords(c.orgId)).toBe(1);
  });

  it('admitted, never completed nor aborted: the reservation released and the key free again', async () => {
    const { admission } = h.clients();
    const c = await h.customer(['mx']);
    const req = admitReq(c, { inputCount: 4 });
    const first = await admission.admit(req);
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ reserved: 4 });
    await h.sql(
      "UPDATE admission.idempotency_records SET claimed_at = now() - interval '1 minute' WHERE admission_id = $1",
      [first.admissionId],
    );
    const done = await h.instances[0]!.reconciler.reconcileOnce();
    expect(done.dropped).toBeGreaterThanOrEqual(1);
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: 0, reserved: 0 });
    const again = await admission.admit(req);
    expect(again.replay).toBe(false);
    await admission.complete({ admissionId: again.admissionId });
    expect(await usageRecords(c.orgId)).toBe(1);
  });
});
