import { Code, ConnectError } from '@connectrpc/connect';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admitReq, Harness } from './harness.js';

// Found by a review (2026-12-03): a v1 completion that waited in admission past the moment its caller gave
// up was still committed. The gateway had answered 503 and aborted; when the abort's answer was lost too,
// the customer was charged for an error. A batched CompleteMany carries the latest deadline of its
// members, so a member with a shorter one was never protected. Now each completion carries its caller's
// deadline (CompleteRequest.timeout_ms, and the call's own) and admission commits none past it.
const h = new Harness();

beforeAll(async () => {
  await h.start();
  await h.addInstance();
  await h.adapter('mx');
});

afterAll(async () => {
  await h.stop();
});

/**
 * Hold the claims table (ACCESS EXCLUSIVE) for `ms`: a replica's read of claims it did not make, the first
 * step of its completion batch, waits until then, as it would behind a slow or locked database.
 */
async function holdClaims(ms: number): Promise<{ released: Promise<void> }> {
  const db = new pg.Client({ connectionString: h.databaseUrl });
  await db.connect();
  await db.query('BEGIN');
  await db.query('LOCK TABLE admission.idempotency_records IN ACCESS EXCLUSIVE MODE');
  const released = (async () => {
    await new Promise((r) => setTimeout(r, ms));
    await db.query('COMMIT');
    await db.end();
  })();
  return { released };
}

describe('a v1 completion is never committed after its caller gave up', () => {
  it('CompleteMany: the member past its own deadline is refused, nothing charged; its neighbour is committed', async () => {
    const c = await h.customer(['mx']);
    const admitted = h.clients(0).admission;
    const late = await admitted.admit(admitReq(c, { inputCount: 10 }));
    const onTime = await admitted.admit(admitReq(c, { inputCount: 3 }));
    // Completed on the other replica (as after a gateway's reconnect), which reads the claims first.
    const { released } = await holdClaims(800);
    const answer = await h.clients(1).admission.completeMany(
      {
        requests: [
          { admissionId: late.admissionId, timeoutMs: 200 },
          { admissionId: onTime.admissionId, timeoutMs: 5_000 },
        ],
      },
      { timeoutMs: 5_000 },
    );
    await released;
    const [first, second] = answer.results;
    expect(first?.result.case).toBe('error');
    expect(first?.result.case === 'error' && first.result.value.code).toBe(Code.DeadlineExceeded);
    expect(second?.result.case).toBe('completed');
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: 3, reserved: 10 });
    // The gateway's abort then undoes the refused one: nothing was committed.
    expect(await admitted.abort({ admissionId: late.admissionId })).toMatchObject({ completed: false });
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: 3, reserved: 0 });
  });

  it('Complete: past the call deadline the completion is not committed, though admission went on', async () => {
    const c = await h.customer(['mx']);
    const first = await h.clients(0).admission.admit(admitReq(c, { inputCount: 10 }));
    const { released } = await holdClaims(800);
    const err = await h
      .clients(1)
      .admission.complete({ admissionId: first.admissionId }, { timeoutMs: 200 })
      .catch((e) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect(err.code).toBe(Code.DeadlineExceeded);
    await released;
    // Admission's batch ran once the table was free: it must not have committed for a caller gone.
    await new Promise((r) => setTimeout(r, 300));
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: 0, reserved: 10 });
    expect(await h.clients(0).admission.abort({ admissionId: first.admissionId })).toMatchObject({
      completed: false,
    });
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: 0, reserved: 0 });
  });

  // Found by a review (2026-12-05): a batch's commit was bounded by its earliest member's deadline, so a
  // member with too little time left for any commit (quota keeps 100 ms of it back, admission 200 ms),
  // or one whose organization's account was locked past its deadline, failed the quota call of the whole
  // batch: every other member, whatever its organization and time left, was answered an error for it and
  // its request 503 (up to 256 requests with a complete result each). Each member now fails alone.
  it('CompleteMany: a member too close to its deadline fails alone; its neighbour is committed', async () => {
    const c = await h.customer(['mx']);
    const admission = h.clients(0).admission;
    const short = await admission.admit(admitReq(c, { inputCount: 10 }));
    const long = await admission.admit(admitReq(c, { inputCount: 3 }));
    const answer = await admission.completeMany(
      {
        requests: [
          { admissionId: short.admissionId, timeoutMs: 250 },
          { admissionId: long.admissionId, timeoutMs: 5_000 },
        ],
      },
      { timeoutMs: 5_000 },
    );
    const [first, second] = answer.results;
    expect(second?.result.case).toBe('completed');
    expect(first?.result.case).toBe('error');
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: 3, reserved: 10 });
    expect(await admission.abort({ admissionId: short.admissionId })).toMatchObject({ completed: false });
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: 3, reserved: 0 });
  });

  // The second case is the same review's, of the fix: a lock held on the account of the member with the
  // later deadline ran out the earlier one's time in the batch's one call, and it failed with it.
  it.each([
    { locked: 'the earlier', holdMs: 1_500, stuckMs: 800, freeMs: 10_000 },
    { locked: 'the later', holdMs: 6_000, stuckMs: 4_000, freeMs: 1_000 },
  ])('CompleteMany: an account locked past $locked deadline fails that member only', async (t) => {
    const [locked, other] = await Promise.all([h.customer(['mx']), h.customer(['mx'])]);
    const admission = h.clients(0).admission;
    const stuck = await admission.admit(admitReq(locked, { inputCount: 10 }));
    const free = await admission.admit(admitReq(other, { inputCount: 3 }));
    const { released: held } = await h.holdAccount(locked.orgId, t.holdMs);
    try {
      const answer = await admission.completeMany(
        {
          requests: [
            { admissionId: stuck.admissionId, timeoutMs: t.stuckMs },
            { admissionId: free.admissionId, timeoutMs: t.freeMs },
          ],
        },
        { timeoutMs: 10_000 },
      );
      const [first, second] = answer.results;
      expect(second?.result.case).toBe('completed');
      expect(first?.result.case).toBe('error');
    } finally {
      await held;
    }
    expect(await h.account(other.orgId, 'mx')).toMatchObject({ used: 3, reserved: 0 });
    expect(await h.account(locked.orgId, 'mx')).toMatchObject({ used: 0, reserved: 10 });
    expect(await admission.abort({ admissionId: stuck.admissionId })).toMatchObject({ completed: false });
  });

  // Found by a review (2026-12-05): the claims of a committed batch were marked before the answer, so a
  // mark that failed or waited past the callers' deadline (admission's PostgreSQL locked or down) answered
  // every member an error: the gateway aborted, could not undo a commit, and answered 503 while the
  // customer was charged (spec: a platform failure "consumes no customer quota").
  it('Complete: a claim that cannot be marked in time does not turn a committed request into an error', async () => {
    const c = await h.customer(['mx']);
    const admission = h.clients(0).admission;
    const first = await admission.admit(admitReq(c, { inputCount: 5 }));
    const { released } = await holdClaims(3_000);
    const started = Date.now();
    try {
      await admission.complete({ admissionId: first.admissionId }, { timeoutMs: 1_500 });
      expect(Date.now() - started).toBeLessThan(1_500);
      expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: 5, reserved: 0 });
    } finally {
      await released;
    }
    // The mark goes on once the table is free: an exact retry then replays.
    const state = async () =>
      (
        await h.sql('SELECT state FROM admission.idempotency_records WHERE admission_id = $1', [
          first.admissionId,
        ])
      ).rows[0]?.state;
    await expect.poll(state, { timeout: 5_000 }).toBe('completed');
  });

  it('a completion within its deadline commits as before (timeout_ms 0: the call deadline only)', async () => {
    const c = await h.customer(['mx']);
    const first = await h.clients(0).admission.admit(admitReq(c, { inputCount: 4 }));
    await h.clients(1).admission.complete({ admissionId: first.admissionId, timeoutMs: 0 });
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: 4, reserved: 0 });
  });
});
