import { createHash } from 'node:crypto';
import { idempotencyKeyMac } from '@dnc/admission';
import { DEV_IDEMPOTENCY_KEY_SECRET } from '@dnc/devstack';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { call, expectNoLeak } from '../support/http.js';
import { expectInvariants } from '../support/invariants.js';
import { findInNats, findInPostgres, findInRedis } from '../support/retention-scan.js';
import { accountUsage, loadRegistry, type SeededOrg, seedOrg } from '../support/seed.js';
import { startTestStack, type TestStack } from '../support/stack.js';

// Spec: v1 execution budget (Limits) and zero retention (What the service does 2). Issue 5 items 3-4.
describe('v1 budget and zero retention (issue 5)', () => {
  let stack: TestStack;
  let org: SeededOrg;
  const BUDGET_MS = 1_500;

  beforeAll(async () => {
    stack = await startTestStack({
      label: 'v1budget',
      countries: ['co'],
      processEnv: { gateway: { DNC_V1_BUDGET_MS: String(BUDGET_MS) } },
    });
    org = await seedOrg(stack, ['co']);
    await loadRegistry(stack, 'co', ['+57 300 123 4567']);
  });
  // After every test (overruns): the stores as the invariant checker reads them.
  afterEach(async () => {
    await expectInvariants(stack);
  });

  afterAll(async () => {
    await stack?.teardown();
  });

  const usage = () => accountUsage(stack, org.orgId, 'co');

  /** A retry of a key whose request failed is a new request: answered in full, not a replay. */
  async function expectFreshRetry(idempotencyKey: string, json: unknown) {
    const retry = await call(stack.baseUrl, 'POST', '/v1/scrub', {
      apiKey: org.apiKey,
      idempotencyKey,
      json,
    });
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotency-replayed')).toBeNull();
  }

  it('an overrun fails the whole request with 503, consumes nothing, leaves no work behind, and the key can be retried', async () => {
    const before = await usage();
    await stack.admin(['adapter', 'drill', '--country', 'co', '--latency-ms', String(BUDGET_MS * 3)]);
    const k = `budget-${Date.now()}`;
    const body = { country: 'co', phones: ['+57 300 123 4567', '3109999999'] };
    try {
      const started = Date.now();
      const res = await call(stack.baseUrl, 'POST', '/v1/scrub', {
        apiKey: org.apiKey,
        idempotencyKey: k,
        json: body,
      });
      const elapsed = Date.now() - started;
      expect(res.status).toBe(503);
      expect(res.body.error).toBe('country_service_temporarily_unavailable');
      expect(res.body).not.toHaveProperty('prohibited_numbers_to_call');
      expect(res.headers.get('x-retention')).toBe('zero');
      expectNoLeak(res);
      expect(elapsed).toBeLessThan(BUDGET_MS + 1_000);
      // Nothing finishes in the background once the adapter's delay has passed.
      await new Promise((r) => setTimeout(r, BUDGET_MS * 3));
      expect(await usage()).toEqual(before);
    } finally {
      await stack.admin(['adapter', 'drill', '--country', 'co', '--clear']);
    }
    await expectFreshRetry(k, body);
    const after = await usage();
    expect(after.used).toBe(before.used + 2);
    expect(after.records).toBe(before.records + 1);
  });

  // Found by a review of the money path (2026-12-03): quota's commit of a v1 request had no bound of its
  // own. Held on a lock past the budget (a usage table or account row locked by a long transaction, a
  // migration), it committed once the lock went, after the gateway had answered 503 and its abort had
  // timed out waiting for the same lock: a platform failure charged. Spec, Errors: "A country or platform
  // failure returns no partial result and consumes no customer quota." The commit's lock waits now end
  // before the caller's deadline, and the abort releases the reservation.
  it('a commit held on a lock past the budget: 503, nothing charged, and the key can be retried', async () => {
    const before = await usage();
    const locker = new pg.Client({ connectionString: stack.databaseUrl });
    await locker.connect();
    const k = `commit-lock-${Date.now()}`;
    const body = { country: 'co', phones: ['3109999998'] };
    try {
      await locker.query('BEGIN');
      // Blocks the usage record's insert only: reservations and releases do not write it.
      await locker.query('LOCK TABLE quota.usage_records IN SHARE MODE');
      const started = Date.now();
      const res = await call(stack.baseUrl, 'POST', '/v1/scrub', {
        apiKey: org.apiKey,
        idempotencyKey: k,
        json: body,
      });
      expect(Date.now() - started).toBeLessThan(BUDGET_MS + 3_000);
      expect([res.status, res.body.error]).toEqual([503, 'platform_failure']);
      expectNoLeak(res);
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    // Whatever waited on the lock has run by now.
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await usage()).toEqual(before);
    await expectFreshRetry(k, body);
    expect(await usage()).toEqual({ ...before, used: before.used + 1, records: before.records + 1 });
  });

  it('nothing of a request or its result is written to Postgres, Redis, NATS or any log', async () => {
    // Distinctive inputs: a registered number in an unusual spelling, a safe one, an invalid one.
    const canaryPhones = ['+57-300-123-4567', '+57 318 765 4321', 'CANARY-ZR-58213'];
    // An Idempotency-Key a client built from a number: "only a keyed non-reversible fingerprint is
    // retained" (spec, Idempotency 4), so neither it nor its plain SHA-256 (which trying every number
    // reverses) may be stored; its MAC under admission's secret is.
    const idempotencyKey = `lead-+573187654321-${Date.now()}`;
    const res = await call(stack.baseUrl, 'POST', '/v1/scrub', {
      apiKey: org.apiKey,
      idempotencyKey,
      json: { country: 'co', phones: canaryPhones },
    });
    expect(res.status).toBe(200);
    expect(res.body.safe_numbers_to_call).toEqual(['+57 318 765 4321']);
    const canaries = ['3187654321', '318 765 4321', '+57-300-123-4567', 'CANARY-ZR-58213'];
    expect(await findInPostgres(stack.databaseUrl, canaries)).toEqual([]);
    const plainHash = createHash('sha256').update(idempotencyKey).digest('hex');
    expect(await findInPostgres(stack.databaseUrl, [idempotencyKey, plainHash])).toEqual([]);
    const keyMac = idempotencyKeyMac(DEV_IDEMPOTENCY_KEY_SECRET, idempotencyKey).toString('hex');
    expect(await findInPostgres(stack.databaseUrl, [keyMac])).toEqual([
      `"admission"."idempotency_records" contains ${keyMac}`,
    ]);
    expect(await findInRedis(canaries)).toEqual([]);
    expect(await findInNats(stack.natsPrefix, canaries)).toEqual([]);
    // Controls: the scanners do find what IS stored (the registry's key, the discovery entries).
    expect(await findInPostgres(stack.databaseUrl, ['3001234567'])).not.toEqual([]);
    expect(await findInNats(stack.natsPrefix, ['registry_size'])).not.toEqual([]);
    const logs = stack.logs();
    for (const c of [...canaries, org.apiKey]) expect(logs.includes(c), `logs contain ${c}`).toBe(false);
  });
});
