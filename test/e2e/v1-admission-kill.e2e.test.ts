import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { call, expectNoLeak } from '../support/http.js';
import { expectInvariants } from '../support/invariants.js';
import { accountUsage, loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';

// Spec, Errors: "A country or platform failure returns no partial result and consumes no customer quota."
// Found by a review of v1 under faults (2026-12-04, left open then): the only admission replica killed
// after quota committed a v1 request and before it answered Complete left the gateway with an unknown
// Complete and an abort nobody could take. It answered 503 platform_failure for a request that was
// charged (the claim reconciler later marked it completed; only a retry of the key got the result).
// The gateway now keeps asking for the abort, within the request's budget, until an admission replica
// (here the restarted one) says how it ended: completed after all, so the result is answered.
describe('v1: the only admission replica killed between the commit and its answer', () => {
  const REGISTERED = '+57 300 123 4567';
  const LOCK = 770_707;
  let stack: TestStack;
  let org: SeededOrg;
  let db: pg.Client;

  beforeAll(async () => {
    stack = await startTestStack({ label: 'v1kill', countries: ['co'] });
    org = await seedOrg(stack, ['co']);
    await loadRegistry(stack, 'co', [REGISTERED]);
    db = new pg.Client({ connectionString: stack.databaseUrl });
    await db.connect();
  });
  afterEach(async () => {
    await expectInvariants(stack);
  });
  afterAll(async () => {
    await db?.end();
    await stack?.teardown();
  });

  const usage = () => accountUsage(stack, org.orgId, 'co');

  /**
   * Marking a claim completed waits on an advisory lock held by `holder`: admission stops after quota's
   * commit, in the mark that precedes its answer. The returned function ends the marks waiting (as if
   * the process had died before sending its mark: PostgreSQL would otherwise finish a statement whose
   * client is gone) and drops the trigger.
   */
  async function holdCompletionMarks(holder: pg.Client): Promise<() => Promise<void>> {
    await holder.query('SELECT pg_advisory_lock($1)', [LOCK]);
    await db.query(`CREATE FUNCTION public.hold_completion_mark() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_advisory_xact_lock(${LOCK}); RETURN NEW; END $$`);
    await db.query(`CREATE TRIGGER hold_completion_mark BEFORE UPDATE ON admission.idempotency_records
      FOR EACH ROW WHEN (NEW.state = 'completed') EXECUTE FUNCTION public.hold_completion_mark()`);
    return async () => {
      await db.query(
        `SELECT pg_terminate_backend(pid) FROM pg_locks
         WHERE locktype = 'advisory' AND objid = $1 AND NOT granted`,
        [LOCK],
      );
      await db.query('DROP TRIGGER IF EXISTS hold_completion_mark ON admission.idempotency_records');
      await db.query('DROP FUNCTION IF EXISTS public.hold_completion_mark()');
      await holder.query('SELECT pg_advisory_unlock($1)', [LOCK]);
    };
  }

  /** Until a session waits for the advisory lock: a completion has committed and is marking its claim. */
  async function markWaiting(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = await db.query(
        "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted",
        [LOCK],
      );
      if (r.rows[0].n > 0) return;
      if (Date.now() > deadline) throw new Error('no completion reached its mark');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it('SIGKILLed after quota committed, restarted: answered 200 with the result, charged once; the retry replays free', async () => {
    const before = await usage();
    const holder = new pg.Client({ connectionString: stack.databaseUrl });
    await holder.connect();
    const release = await holdCompletionMarks(holder);
    const idempotencyKey = `admission-kill-${Date.now()}`;
    const json = { country: 'co', phones: [REGISTERED, '3109999999'] };
    try {
      const started = Date.now();
      const pending = call(stack.baseUrl, 'POST', '/v1/scrub', { apiKey: org.apiKey, idempotencyKey, json });
      await markWaiting();
      await stack.kill('admission');
      await release();
      await stack.start('admission');
      const res = await pending;
      expect(Date.now() - started).toBeLessThan(15_000 + 1_000);
      expect(res.status).toBe(200);
      expect(res.headers.get('idempotency-replayed')).toBeNull();
      expect(res.body.prohibited_numbers_to_call).toEqual([REGISTERED]);
      expect(res.body.safe_numbers_to_call).toEqual(['3109999999']);
      expectNoLeak(res);
    } finally {
      await release();
      await holder.end();
    }
    expect(await usage()).toEqual({ ...before, used: before.used + 2, records: before.records + 1 });
    const retry = await call(stack.baseUrl, 'POST', '/v1/scrub', {
      apiKey: org.apiKey,
      idempotencyKey,
      json,
    });
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotency-replayed')).toBe('true');
    expect(await usage()).toEqual({ ...before, used: before.used + 2, records: before.records + 1 });
  });
});
