import { randomUUID } from 'node:crypto';
import { Code, ConnectError } from '@connectrpc/connect';
import { serviceClient } from '@dnc/kit';
import { quotav1 } from '@dnc/proto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestQuota, type TestQuota } from './support.js';

// Found by a review of v2 money under faults (2026-12-04): CommitMany's lock waits end by its caller's
// deadline, but the single Commit and Release (the scheduler's settlements, admission's undo) waited on a
// locked account up to PostgreSQL's statement timeout (15 s), past a 5 s deadline: the caller had an error
// and a retry ahead while the call could still apply, and each such call held one of quota's connections
// for the whole wait. The lock is real: a second connection holds the account row.
let t: TestQuota;
let db: pg.Pool;

beforeAll(async () => {
  t = await startTestQuota('quota_single_deadline');
  db = new pg.Pool({ connectionString: t.databaseUrl, max: 2 });
});

afterAll(async () => {
  await db?.end();
  await t?.stop();
});

/** The outcome of a call: applied, or the code it failed with. */
async function timed(call: Promise<unknown>): Promise<{ outcome: string | Code }> {
  const outcome = await call.then(
    () => 'applied',
    (e: unknown) => ConnectError.from(e).code,
  );
  return { outcome };
}

type QuotaClient = TestQuota['client'];

/**
 * A Commit and a Release of two fresh reservations, each on an account a second connection holds locked:
 * each fails within its caller's deadline (1.5 s) and leaves nothing waiting; once the lock is gone, both
 * apply. `options`: what the caller passes with each call.
 */
async function onLockedAccount(client: QuotaClient, options: { timeoutMs?: number }): Promise<void> {
  const org = randomUUID();
  await t.admin.setLimit({ orgId: org, country: 'mx', limit: 100n });
  const [toCommit, toRelease] = [randomUUID(), randomUUID()];
  for (const reservationId of [toCommit, toRelease])
    await client.reserve({
      reservationId,
      orgId: org,
      country: 'mx',
      amount: 5n,
      kind: quotav1.UsageKind.JOB,
    });
  const lock = await db.connect();
  try {
    await lock.query('BEGIN');
    await lock.query('SELECT 1 FROM quota.accounts WHERE org_id = $1 FOR UPDATE', [org]);
    const outcomes = await Promise.all([
      timed(client.commit({ reservationId: toCommit }, options)),
      timed(client.release({ reservationId: toRelease }, options)),
    ]);
    // Unavailable: the lock wait ended by the deadline; DeadlineExceeded: the caller's own timer.
    for (const r of outcomes) expect([Code.Unavailable, Code.DeadlineExceeded]).toContain(r.outcome);
    // Past the caller's deadline, with the lock still held: nothing waits in quota any more (before, both
    // waited for the statement timeout, 15 s).
    await new Promise((r) => setTimeout(r, 300));
    const waiting = await db.query(
      `SELECT count(*)::int AS n, string_agg(query, ' | ') AS q FROM pg_stat_activity
       WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    expect(waiting.rows[0]).toEqual({ n: 0, q: null });
  } finally {
    await lock.query('ROLLBACK').catch(() => {});
    lock.release();
  }
  await new Promise((r) => setTimeout(r, 300));
  expect(await t.account(org, 'mx')).toEqual({ limit: 100, used: 0, reserved: 10 });

  await client.commit({ reservationId: toCommit }, options);
  expect(await client.release({ reservationId: toRelease }, options)).toMatchObject({ committed: false });
  expect(await t.account(org, 'mx')).toEqual({ limit: 100, used: 5, reserved: 0 });
}

describe("Commit and Release end by their caller's deadline", () => {
  it('called as the services call quota (the kit client, its default deadline)', async () => {
    const client = serviceClient(quotav1.QuotaService, `http://127.0.0.1:${t.quota.port}`, 1_500, {
      security: await t.pki.security('admission'),
      peer: 'quota',
    });
    await onLockedAccount(client, {});
  });

  it('with a deadline of the call', async () => {
    await onLockedAccount(t.client, { timeoutMs: 1_500 });
  });
});
