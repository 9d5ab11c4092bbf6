import { randomUUID } from 'node:crypto';
import { Code, ConnectError } from '@connectrpc/connect';
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

/** The outcome of a call and how long it took. */
async function timed(call: Promise<unknown>): Promise<{ outcome: string | Code; ms: number }> {
  const started = Date.now();
  const outcome = await call.then(
    () => 'applied',
    (e: unknown) => ConnectError.from(e).code,
  );
  return { outcome, ms: Date.now() - started };
}

describe("Commit and Release end by their caller's deadline", () => {
  it('on a locked account each fails within its deadline and changes nothing; once free, each applies', async () => {
    const org = randomUUID();
    await t.admin.setLimit({ orgId: org, country: 'mx', limit: 100n });
    const [toCommit, toRelease] = [randomUUID(), randomUUID()];
    for (const reservationId of [toCommit, toRelease])
      await t.client.reserve({
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
      const [commit, release] = await Promise.all([
        timed(t.client.commit({ reservationId: toCommit }, { timeoutMs: 1_500 })),
        timed(t.client.release({ reservationId: toRelease }, { timeoutMs: 1_500 })),
      ]);
      // Unavailable: the lock wait ended by the deadline; DeadlineExceeded: the caller's own timer.
      for (const r of [commit, release]) {
        expect([Code.Unavailable, Code.DeadlineExceeded]).toContain(r.outcome);
        expect(r.ms).toBeLessThan(1_900);
      }
      // Past the caller's deadline, with the lock still held: nothing waits in quota any more.
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

    await t.client.commit({ reservationId: toCommit }, { timeoutMs: 1_500 });
    expect(await t.client.release({ reservationId: toRelease }, { timeoutMs: 1_500 })).toMatchObject({
      committed: false,
    });
    expect(await t.account(org, 'mx')).toEqual({ limit: 100, used: 5, reserved: 0 });
  });
});
