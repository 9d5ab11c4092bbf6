import { randomUUID } from 'node:crypto';
import { Code, ConnectError } from '@connectrpc/connect';
import { createPool, readPublicReason } from '@dnc/kit';
import { quotav1 } from '@dnc/proto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { periodOf } from '../src/domain/period.js';
import type { RunningQuota } from '../src/server.js';
import { Ledger } from '../src/store/ledger.js';
import { startTestQuota, type TestQuota } from './support.js';

const { ReserveOutcome, CommitOutcome, UsageKind } = quotav1;

let t: TestQuota;
let quota: RunningQuota;
let databaseUrl: string;
let db: pg.Pool;
let client: TestQuota['client'];
let admin: TestQuota['admin'];

beforeAll(async () => {
  t = await startTestQuota('quota_batch');
  ({ quota, databaseUrl, client, admin } = t);
  db = new pg.Pool({ connectionString: databaseUrl, max: 4 });
});

afterAll(async () => {
  await db?.end();
  await t?.stop();
});

const account = (orgId: string, country: string) => t.account(orgId, country);

function item(orgId: string, country: string, amount: number, reservationId: string = randomUUID()) {
  return { reservationId, orgId, country, amount: BigInt(amount), kind: UsageKind.SYNC };
}

async function usageCounts(orgId: string): Promise<Map<string, number>> {
  const { records } = await admin.listUsage({ orgId });
  const counts = new Map<string, number>();
  for (const r of records) counts.set(r.reservationId, (counts.get(r.reservationId) ?? 0) + 1);
  return counts;
}

/** Until a statement of this database matching `pattern` (LIKE) waits on a lock; fails after 10 s. */
async function waitingOnLock(pattern: string, failure: string): Promise<void> {
  for (let waited = 0; ; waited += 20) {
    const { rows } = await db.query(
      `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
       AND query LIKE $1`,
      [pattern],
    );
    if (rows.length > 0) return;
    if (waited > 10_000) throw new Error(failure);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function shuffle<T>(items: T[]): T[] {
  const a = [...items];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

describe('ReserveMany and CommitMany against PostgreSQL', () => {
  it('one batch with every outcome, each item as the single Reserve would answer it', async () => {
    const org = randomUUID();
    await admin.setLimit({ orgId: org, country: 'mx', limit: 10n });
    const before = item(org, 'mx', 2);
    const released = item(org, 'mx', 1);
    await client.reserve(before);
    await client.reserve(released);
    await client.release({ reservationId: released.reservationId });

    const { outcomes } = await client.reserveMany({
      reservations: [
        item(org, 'mx', 4), // 2 + 4 = 6
        before, // the same reservation again
        { ...before, amount: 3n }, // its id, another amount
        { ...before, orgId: randomUUID() }, // its id, another org
        released,
        item(org, 'mx', 5), // 6 + 5 > 10
        item(org, 'mx', 4), // 6 + 4 = 10: a refusal takes nothing
      ],
    });
    expect(outcomes).toEqual([
      ReserveOutcome.OK,
      ReserveOutcome.OK,
      ReserveOutcome.ID_CONFLICT,
      ReserveOutcome.ID_CONFLICT,
      ReserveOutcome.RELEASED,
      ReserveOutcome.QUOTA_EXCEEDED,
      ReserveOutcome.OK,
    ]);
    expect(await account(org, 'mx')).toEqual({ limit: 10, used: 0, reserved: 10 });
  });

  it('items apply in order: at the limit the later ones are refused; nothing passes the limit', async () => {
    const org = randomUUID();
    await admin.setLimit({ orgId: org, country: 'co', limit: 10n });
    const first = await client.reserveMany({
      reservations: [item(org, 'co', 4), item(org, 'co', 4), item(org, 'co', 4)],
    });
    expect(first.outcomes).toEqual([ReserveOutcome.OK, ReserveOutcome.OK, ReserveOutcome.QUOTA_EXCEEDED]);
    const second = await client.reserveMany({
      reservations: [item(org, 'co', 2), item(org, 'co', 1), item(org, 'co', 0)],
    });
    expect(second.outcomes).toEqual([ReserveOutcome.OK, ReserveOutcome.QUOTA_EXCEEDED, ReserveOutcome.OK]);
    expect(await account(org, 'co')).toEqual({ limit: 10, used: 0, reserved: 10 });
    // No limit set for another country: refused, like the single call.
    const none = await client.reserveMany({ reservations: [item(org, 'ar', 1)] });
    expect(none.outcomes).toEqual([ReserveOutcome.QUOTA_EXCEEDED]);
  });

  it('a repeated id in one batch behaves like a repeated call; the same batch again changes nothing', async () => {
    const org = randomUUID();
    await admin.setLimit({ orgId: org, country: 'es', limit: 10n });
    const x = item(org, 'es', 3);
    const y = item(org, 'es', 8);
    const batch = [x, x, { ...x, amount: 5n }, y, x, item(org, 'es', 7, y.reservationId), y];
    const expected = [
      ReserveOutcome.OK,
      ReserveOutcome.OK,
      ReserveOutcome.ID_CONFLICT,
      ReserveOutcome.QUOTA_EXCEEDED, // 3 + 8 > 10
      ReserveOutcome.OK,
      ReserveOutcome.OK, // y's id, first fitting attempt: 3 + 7 = 10
      ReserveOutcome.ID_CONFLICT, // y's id is now a reservation of 7
    ];
    expect((await client.reserveMany({ reservations: batch })).outcomes).toEqual(expected);
    expect(await account(org, 'es')).toEqual({ limit: 10, used: 0, reserved: 10 });
    expect((await client.reserveMany({ reservations: batch })).outcomes).toEqual([
      ReserveOutcome.OK,
      ReserveOutcome.OK,
      ReserveOutcome.ID_CONFLICT,
      ReserveOutcome.ID_CONFLICT, // y's id was taken by the reservation of 7 in the first batch
      ReserveOutcome.OK,
      ReserveOutcome.OK,
      ReserveOutcome.ID_CONFLICT,
    ]);
    expect(await account(org, 'es')).toEqual({ limit: 10, used: 0, reserved: 10 });

    await admin.setLimit({ orgId: org, country: 'au', limit: 10n });
    const mixed = [item(org, 'au', 4), item(org, 'au', 4), item(org, 'au', 4), x];
    const once = await client.reserveMany({ reservations: mixed });
    expect(once.outcomes).toEqual([
      ReserveOutcome.OK,
      ReserveOutcome.OK,
      ReserveOutcome.QUOTA_EXCEEDED,
      ReserveOutcome.OK,
    ]);
    const twice = await client.reserveMany({ reservations: mixed });
    expect(twice.outcomes).toEqual(once.outcomes);
    expect(await account(org, 'au')).toEqual({ limit: 10, used: 0, reserved: 8 });
    expect(await account(org, 'es')).toEqual({ limit: 10, used: 0, reserved: 10 });
  });

  // Found by a review (2026-12-04): the caller's deadline bounded each lock wait of a commit on its own
  // (PostgreSQL's lock_timeout), not the commit: held on the account row for most of it, then on the usage
  // table for most of it again, the commit landed after its caller had stopped waiting (the gateway's 503,
  // its abort timed out on the same account row): a platform failure charged. Spec, Errors: "A country or
  // platform failure returns no partial result and consumes no customer quota."
  it("CommitMany ends by its caller's deadline across lock waits in sequence, committing nothing", async () => {
    const org = randomUUID();
    await admin.setLimit({ orgId: org, country: 'au', limit: 100n });
    const reserved = item(org, 'au', 5);
    await client.reserveMany({ reservations: [reserved] });
    const rowLock = await db.connect();
    const tableLock = await db.connect();
    try {
      await rowLock.query('BEGIN');
      await rowLock.query('SELECT 1 FROM quota.accounts WHERE org_id = $1 FOR UPDATE', [org]);
      await tableLock.query('BEGIN');
      await tableLock.query('LOCK TABLE quota.usage_records IN SHARE MODE');
      const started = Date.now();
      const commit = client
        .commitMany({ reservationIds: [reserved.reservationId] }, { timeoutMs: 1_500 })
        .then(
          () => 'committed',
          (e: unknown) => ConnectError.from(e).code,
        );
      // Each lock held for less than the deadline, the two together for more.
      await waitingOnLock('%commit_many%', 'the commit never waited on the account row');
      await new Promise((r) => setTimeout(r, 900));
      await rowLock.query('COMMIT');
      const ended = commit.then(() => Date.now() - started);
      await new Promise((r) => setTimeout(r, 1_100));
      await tableLock.query('COMMIT');
      // Unavailable: the commit's lock wait ended by the deadline; DeadlineExceeded: the caller's own timer.
      expect([Code.Unavailable, Code.DeadlineExceeded]).toContain(await commit);
      expect(await ended).toBeLessThan(1_900);
    } finally {
      await rowLock.query('ROLLBACK').catch(() => {});
      await tableLock.query('ROLLBACK').catch(() => {});
      rowLock.release();
      tableLock.release();
    }
    // Whatever waited has ended by now: the reservation is open, nothing used, no usage record.
    await new Promise((r) => setTimeout(r, 300));
    expect(await account(org, 'au')).toEqual({ limit: 100, used: 0, reserved: 5 });
    expect(await usageCounts(org)).toEqual(new Map());
  });

  // Found by a review (2026-12-04): the deadline was a duration the commit's SQL counted from its own start,
  // so a commit that first waited for one of the pool's connections (each held by a commit blocked on a
  // lock) got its whole budget again once it had one, and landed after its caller had stopped waiting.
  it('the commit counts the time it waited for a connection against its deadline', async () => {
    const org = randomUUID();
    await admin.setLimit({ orgId: org, country: 'au', limit: 100n });
    const reserved = item(org, 'au', 5);
    await client.reserveMany({ reservations: [reserved] });
    const single = createPool(databaseUrl, 1);
    const ledger = new Ledger(single);
    const tableLock = await db.connect();
    const busy = await single.connect();
    try {
      await tableLock.query('BEGIN');
      await tableLock.query('LOCK TABLE quota.usage_records IN SHARE MODE');
      const started = Date.now();
      const commit = ledger.commitMany([reserved.reservationId], 1_400).then(
        () => Date.now() - started,
        () => 'failed',
      );
      await new Promise((r) => setTimeout(r, 1_000));
      busy.release();
      await new Promise((r) => setTimeout(r, 1_000));
      await tableLock.query('COMMIT');
      expect(await commit).toBe('failed');
    } finally {
      await tableLock.query('ROLLBACK').catch(() => {});
      tableLock.release();
      await single.end();
    }
    expect(await account(org, 'au')).toEqual({ limit: 100, used: 0, reserved: 5 });
    // No lock to wait for once connected, but the connection came after the deadline: not sent.
    const late = createPool(databaseUrl, 1);
    const held = await late.connect();
    try {
      const commit = new Ledger(late).commitMany([reserved.reservationId], 300).then(
        () => 'committed',
        (e: unknown) => ConnectError.from(e).code,
      );
      await new Promise((r) => setTimeout(r, 500));
      held.release();
      expect(await commit).toBe(Code.DeadlineExceeded);
    } finally {
      await late.end();
    }
    expect(await account(org, 'au')).toEqual({ limit: 100, used: 0, reserved: 5 });
  });

  it('CommitMany writes one usage record per reservation, whatever the repeats within and across batches', async () => {
    const org = randomUUID();
    await admin.setLimit({ orgId: org, country: 'au', limit: 100n });
    const items = [item(org, 'au', 5), item(org, 'au', 7), item(org, 'au', 11), item(org, 'au', 13)];
    const [a, b, c, d] = items.map((i) => i.reservationId) as [string, string, string, string];
    await client.reserveMany({ reservations: items });
    await client.release({ reservationId: d });
    const unknown = randomUUID();

    const first = await client.commitMany({ reservationIds: [a, b, a, unknown, d, a] });
    expect(first.outcomes).toEqual([
      CommitOutcome.COMMITTED,
      CommitOutcome.COMMITTED,
      CommitOutcome.COMMITTED,
      CommitOutcome.NOT_FOUND,
      CommitOutcome.RELEASED,
      CommitOutcome.COMMITTED,
    ]);
    const second = await client.commitMany({ reservationIds: [b, c, a, c] });
    expect(second.outcomes).toEqual(Array(4).fill(CommitOutcome.COMMITTED));
    // The single calls agree with the batch.
    await client.commit({ reservationId: c });
    await expect(client.commit({ reservationId: d })).rejects.toMatchObject({
      code: Code.FailedPrecondition,
    });
    await expect(client.commit({ reservationId: unknown })).rejects.toMatchObject({ code: Code.NotFound });

    expect(await usageCounts(org)).toEqual(
      new Map([
        [a, 1],
        [b, 1],
        [c, 1],
      ]),
    );
    expect(await account(org, 'au')).toEqual({ limit: 100, used: 5 + 7 + 11, reserved: 0 });
    // A release after the commit changes nothing; a release of a never-reserved id is a tombstone.
    expect((await client.release({ reservationId: a })).committed).toBe(true);
    await client.release({ reservationId: unknown });
    expect((await client.commitMany({ reservationIds: [unknown] })).outcomes).toEqual([
      CommitOutcome.RELEASED,
    ]);
    expect((await client.reserveMany({ reservations: [item(org, 'au', 1, unknown)] })).outcomes).toEqual([
      ReserveOutcome.ID_CONFLICT, // the tombstone, as the single Reserve answers it (ALREADY_EXISTS)
    ]);
    expect(await account(org, 'au')).toEqual({ limit: 100, used: 23, reserved: 0 });
  });

  it('parallel batches on one account never pass the limit', async () => {
    const org = randomUUID();
    await admin.setLimit({ orgId: org, country: 'sg', limit: 1000n });
    // 20 batches of 50 reservations of 3 = 3000 asked for a limit of 1000: exactly 333 fit (999).
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        client.reserveMany({ reservations: Array.from({ length: 50 }, () => item(org, 'sg', 3)) }),
      ),
    );
    const outcomes = results.flatMap((r) => r.outcomes);
    expect(outcomes.filter((o) => o === ReserveOutcome.OK)).toHaveLength(333);
    expect(outcomes.filter((o) => o === ReserveOutcome.QUOTA_EXCEEDED)).toHaveLength(1000 - 333);
    expect(await account(org, 'sg')).toEqual({ limit: 1000, used: 0, reserved: 999 });
  });

  it('parallel CommitMany, ReserveMany and Release over several accounts never deadlock and stay consistent', async () => {
    const org = randomUUID();
    const countries = ['mx', 'co', 'ar'];
    for (const country of countries) await admin.setLimit({ orgId: org, country, limit: 1_000_000n });
    const items = Array.from({ length: 300 }, (_, i) => item(org, countries[i % 3]!, 1 + (i % 17)));
    for (let i = 0; i < items.length; i += 100) {
      const r = await client.reserveMany({ reservations: items.slice(i, i + 100) });
      expect(r.outcomes.every((o) => o === ReserveOutcome.OK)).toBe(true);
    }
    const ids = items.map((i) => i.reservationId);
    const commitOutcomes = new Map<string, Set<quotav1.CommitOutcome>>();
    const releasedCommitted = new Map<string, boolean>();
    const work: Promise<unknown>[] = [];
    for (let k = 0; k < 12; k++) {
      const batch = shuffle(ids).slice(0, 120);
      work.push(
        client.commitMany({ reservationIds: batch }).then(({ outcomes }) =>
          outcomes.forEach((o, i) => {
            const id = batch[i]!;
            commitOutcomes.set(id, (commitOutcomes.get(id) ?? new Set()).add(o));
          }),
        ),
      );
    }
    for (const id of shuffle(ids).slice(0, 100)) {
      work.push(
        client.release({ reservationId: id }).then(({ committed }) => releasedCommitted.set(id, committed)),
      );
    }
    // New reservations on the same accounts, in mixed account order, at the same time.
    const fresh = Array.from({ length: 8 }, () =>
      shuffle(Array.from({ length: 30 }, (_, i) => item(org, countries[i % 3]!, 2))),
    );
    for (const batch of fresh) work.push(client.reserveMany({ reservations: batch }));
    const settled = await Promise.allSettled(shuffle(work));
    expect(settled.filter((s) => s.status === 'rejected')).toEqual([]);

    const { rows } = await db.query<{
      reservation_id: string;
      country: string;
      amount: string;
      state: string;
    }>('SELECT reservation_id, country, amount, state FROM quota.reservations WHERE org_id = $1', [org]);
    const state = new Map(rows.map((r) => [r.reservation_id, r.state]));
    expect(rows).toHaveLength(300 + 8 * 30);
    for (const [id, seen] of commitOutcomes) {
      // Every id was either committed by a batch (then all batches say committed) or released first.
      expect(seen.size).toBe(1);
      expect(state.get(id)).toBe(seen.has(CommitOutcome.COMMITTED) ? 'committed' : 'released');
    }
    for (const [id, committed] of releasedCommitted) {
      expect(state.get(id)).toBe(committed ? 'committed' : 'released');
    }
    const usage = await usageCounts(org);
    const committedIds = rows.filter((r) => r.state === 'committed').map((r) => r.reservation_id);
    expect(new Set(usage.keys())).toEqual(new Set(committedIds));
    expect([...usage.values()].every((n) => n === 1)).toBe(true);
    for (const country of countries) {
      const sum = (s: string) =>
        rows
          .filter((r) => r.country === country && r.state === s)
          .reduce((total, r) => total + Number(r.amount), 0);
      expect(await account(org, country)).toEqual({
        limit: 1_000_000,
        used: sum('committed'),
        reserved: sum('reserved'),
      });
    }
  });

  it('a tombstone written while a batch waits for it: the batch is read again and sees the release', async () => {
    const org = randomUUID();
    await admin.setLimit({ orgId: org, country: 'mx', limit: 100n });
    const id = randomUUID();
    const release = await db.connect();
    try {
      await release.query('BEGIN');
      // What Release of an unknown id writes, left uncommitted: the batch's insert waits for it.
      await release.query(
        `INSERT INTO quota.reservations (reservation_id, org_id, country, period, amount, kind, state)
         VALUES ($1, '', '', '', 0, 0, 'released')`,
        [id],
      );
      const pending = client.reserveMany({ reservations: [item(org, 'mx', 10), item(org, 'mx', 5, id)] });
      await waitingOnLock('%reserve_many%', 'the batch never waited for the tombstone');
      await release.query('COMMIT');
      expect((await pending).outcomes).toEqual([ReserveOutcome.OK, ReserveOutcome.ID_CONFLICT]);
    } finally {
      release.release();
    }
    expect(await account(org, 'mx')).toEqual({ limit: 100, used: 0, reserved: 10 });
  });

  it('a release that waits for a batch still reserving its id releases what the batch reserved', async () => {
    // Admission's path when a reserve times out on its side while quota is still writing it: the
    // release finds no row (the batch has not committed), and its tombstone waits on the batch's
    // row. Once the batch commits, the reservation it made must be released, not left open with
    // nobody to settle it (chaos run of stop 28: a job reservation open, no claim, no job).
    const org = randomUUID();
    await admin.setLimit({ orgId: org, country: 'co', limit: 100n });
    const id = randomUUID();
    const reserve = await db.connect();
    try {
      await reserve.query('BEGIN');
      const { rows } = await reserve.query<{ outcomes: string[] }>(
        'SELECT quota.reserve_many($1::text[], $2::text[], $3::text[], $4::bigint[], $5::smallint[], $6) AS outcomes',
        [[id], [org], ['co'], [30], [UsageKind.JOB], periodOf(new Date())],
      );
      expect(rows[0]!.outcomes).toEqual(['ok']);
      const pending = client.release({ reservationId: id });
      await waitingOnLock('%INSERT INTO quota.reservations%', 'the release never waited for the batch');
      await reserve.query('COMMIT');
      expect((await pending).committed).toBe(false);
    } finally {
      reserve.release();
    }
    const { rows: state } = await db.query('SELECT state FROM quota.reservations WHERE reservation_id = $1', [
      id,
    ]);
    expect(state).toEqual([{ state: 'released' }]);
    expect(await account(org, 'co')).toEqual({ limit: 100, used: 0, reserved: 0 });
    // And a late commit of it is refused: the request it belonged to was undone.
    expect((await client.commitMany({ reservationIds: [id] })).outcomes).toEqual([CommitOutcome.RELEASED]);
  });

  it('at most 1,000 items per batch; an empty batch answers nothing; every item is checked', async () => {
    const org = randomUUID();
    await admin.setLimit({ orgId: org, country: 'mx', limit: 1_000_000n });
    const thousand = Array.from({ length: 1000 }, () => item(org, 'mx', 1));
    const reserved = await client.reserveMany({ reservations: thousand });
    expect(reserved.outcomes).toEqual(Array(1000).fill(ReserveOutcome.OK));
    const ids = thousand.map((i) => i.reservationId);
    const committed = await client.commitMany({ reservationIds: ids });
    expect(committed.outcomes).toEqual(Array(1000).fill(CommitOutcome.COMMITTED));
    expect(await account(org, 'mx')).toEqual({ limit: 1_000_000, used: 1000, reserved: 0 });

    const tooMany = await client
      .reserveMany({ reservations: [...thousand, item(org, 'mx', 1)] })
      .catch((e: unknown) => e);
    expect(ConnectError.from(tooMany).code).toBe(Code.InvalidArgument);
    expect(readPublicReason(tooMany)?.reason).toBe('validation_error');
    const tooManyIds = await client
      .commitMany({ reservationIds: [...ids, randomUUID()] })
      .catch((e: unknown) => e);
    expect(ConnectError.from(tooManyIds).code).toBe(Code.InvalidArgument);
    expect(readPublicReason(tooManyIds)?.reason).toBe('validation_error');

    expect((await client.reserveMany({ reservations: [] })).outcomes).toEqual([]);
    expect((await client.commitMany({ reservationIds: [] })).outcomes).toEqual([]);

    // One bad item refuses the whole batch, before anything is reserved.
    const before = await account(org, 'mx');
    await expect(
      client.reserveMany({ reservations: [item(org, 'mx', 1), item(org, 'fr', 1)] }),
    ).rejects.toThrow(/reservations\[1\]\.country/);
    await expect(client.reserveMany({ reservations: [item(org, 'mx', 1, 'x'.repeat(201))] })).rejects.toThrow(
      /reservations\[0\]\.reservation_id/,
    );
    await expect(
      client.reserveMany({ reservations: [{ ...item(org, 'mx', 1), amount: 2n ** 53n }] }),
    ).rejects.toThrow(/reservations\[0\]\.amount/);
    await expect(client.commitMany({ reservationIds: [randomUUID(), ''] })).rejects.toThrow(
      /reservation_ids\[1\]/,
    );
    expect(await account(org, 'mx')).toEqual(before);
  });

  it('counts batch items in the same metrics as single calls', async () => {
    const org = randomUUID();
    await admin.setLimit({ orgId: org, country: 'ar', limit: 5n });
    const read = async () => {
      const text = await quota.service.metrics.metrics();
      const value = (re: RegExp) => Number(re.exec(text)?.[1] ?? 0);
      return {
        reserve: value(/dnc_quota_operations_total\{[^}]*operation="reserve"[^}]*\} (\d+)/),
        commit: value(/dnc_quota_operations_total\{[^}]*operation="commit"[^}]*\} (\d+)/),
        rejected: value(/dnc_quota_rejections_total\{[^}]*country="ar"[^}]*\} (\d+)/),
      };
    };
    const before = await read();
    const items = [item(org, 'ar', 2), item(org, 'ar', 2), item(org, 'ar', 2)];
    await client.reserveMany({ reservations: items });
    await client.commitMany({ reservationIds: items.map((i) => i.reservationId) });
    const after = await read();
    expect(after.reserve - before.reserve).toBe(2);
    expect(after.commit - before.commit).toBe(2);
    expect(after.rejected - before.rejected).toBe(1);
  });
});
