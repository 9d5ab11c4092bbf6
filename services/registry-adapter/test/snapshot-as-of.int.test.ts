import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@connectrpc/connect';
import { createPool, readPublicReason } from '@dnc/kit';
import { registryv1 } from '@dnc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAdapter } from '../src/index.js';
import { adapterClients, isolatedEnv, startTestAdapter } from './support/adapter.js';

const { Outcome, LoadMode } = registryv1;
const DAY = 86_400_000;

// Found by a review (2026-12-03): a snapshot's age was its commit time, and an add or remove reset it. A
// registry copy consulted 40 days ago plus one line added by the operator yesterday was served as one day
// old: Argentina's re-consultation every 30 days (the country's maximum age) was silently skipped, and the
// X-Registry-Snapshot-At header named a time the registry was never consulted. A load may now say when the
// registry was consulted (LoadHeader.as_of); a delta without one keeps its base's time.
describe('a snapshot is as old as the registry consultation it comes from (mx, 30-day maximum age)', () => {
  const env = isolatedEnv('adapter_as_of');
  let adapter: RunningAdapter;

  const pool = createPool(env.databaseUrl);

  beforeAll(async () => {
    adapter = await startTestAdapter(env, 'mx');
  });
  afterAll(async () => {
    await adapter?.shutdown();
    await pool.end();
    await env.drop();
  });

  const load = (
    mode: registryv1.LoadMode,
    lines: string[],
    asOf?: Date,
    allow: { allowOlder?: boolean; allowRepeat?: boolean; allowShrink?: boolean } = {},
  ) => {
    const { admin } = adapterClients(adapter.address);
    async function* requests() {
      yield {
        part: {
          case: 'header' as const,
          value: { country: 'mx', mode, ...allow, ...(asOf ? { asOf: timestampFromDate(asOf) } : {}) },
        },
      };
      yield { part: { case: 'chunk' as const, value: { lines } } };
      yield { part: { case: 'end' as const, value: { lines: BigInt(lines.length) } } };
    }
    return admin.load(requests());
  };
  const timeOf = (r: { snapshotTime?: Parameters<typeof timestampDate>[0] }) =>
    timestampDate(r.snapshotTime!);
  const check = () =>
    adapterClients(adapter.address).adapter.check({ country: 'mx', phones: ['+52 55 1234 5678'] });
  const swappedTo = async (snapshotId: string) => {
    while (adapter.watcher?.current?.snapshotId !== snapshotId) await new Promise((r) => setTimeout(r, 20));
  };

  it('a replace is as of now unless it says otherwise; Check names that time', async () => {
    const now = await load(LoadMode.REPLACE, ['+52 55 1234 5678']);
    expect(Math.abs(timeOf(now).getTime() - Date.now())).toBeLessThan(60_000);
    const tenDays = new Date(Date.now() - 10 * DAY);
    const older = await load(LoadMode.REPLACE, ['+52 55 1234 5678'], tenDays, { allowOlder: true });
    expect(timeOf(older).getTime()).toBe(tenDays.getTime());
    await swappedTo(older.snapshotId);
    const answer = await check();
    expect(answer.outcomes).toEqual([Outcome.PROHIBITED]);
    expect(timestampDate(answer.snapshotTime!).getTime()).toBe(tenDays.getTime());
  });

  /** A number of its own for each delta of a test: loads are known by their numbers. */
  let numbered = 0;
  const fresh = () => `+52 55 40${String(++numbered).padStart(6, '0')}`;
  const refusal = (loading: Promise<unknown>) =>
    loading.then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
  const prohibited = async (snapshotId: string, phone: string) => {
    await swappedTo(snapshotId);
    const answer = await adapterClients(adapter.address).adapter.check({ country: 'mx', phones: [phone] });
    return answer.outcomes[0] === Outcome.PROHIBITED;
  };
  const current = async () => (await adapterClients(adapter.address).admin.getRegistryStatus({})).snapshotId;

  // Found by a review (2026-12-05, left open then): a removal dated later than the copy dated the whole
  // copy then, though no number registered in between was in it: a copy past its maximum age was served
  // as fresh, and X-Registry-Snapshot-At named a time its registrations were never read. A removal only
  // makes numbers safe; the copy is as of the last registrations it holds (a replace or an add).
  it('an add keeps its base’s time unless it gives one; a removal keeps it, even dated later', async () => {
    const y = fresh();
    const base = timeOf(await adapterClients(adapter.address).admin.getRegistryStatus({}));
    const added = await load(LoadMode.ADD, [y]);
    expect(timeOf(added).getTime()).toBe(base.getTime());
    // A removal must give its as_of (below); one published as of the copy keeps the copy's time.
    const removed = await load(LoadMode.REMOVE, [y], base);
    expect(timeOf(removed).getTime()).toBe(base.getTime());
    const published = new Date(Date.now() - 2 * DAY);
    const z = fresh();
    const delta = await load(LoadMode.ADD, [z], published);
    expect(timeOf(delta).getTime()).toBe(published.getTime());
    const later = await load(LoadMode.REMOVE, [z], new Date(Date.now() - DAY));
    expect(await prohibited(later.snapshotId, z)).toBe(false);
    expect(timeOf(later).getTime()).toBe(published.getTime());
    await swappedTo(later.snapshotId);
    expect(timeOf(await check()).getTime()).toBe(published.getTime());
  });

  // Found by a review (2026-12-03): a delta dated before the copy it applied to (a retried or replayed
  // older delta) was applied: a number added since was removed again (answered safe) and the copy dated back.
  it('a removal dated before the current snapshot is refused unless allow_older; an add is applied; both keep the copy’s time', async () => {
    const y = fresh();
    await load(LoadMode.REPLACE, ['+52 55 1234 5678'], new Date(Date.now() - 2 * DAY), { allowOlder: true });
    const added = await load(LoadMode.ADD, [y], new Date(Date.now() - DAY));
    const late = new Date(Date.now() - 3 * DAY);
    const error = await refusal(load(LoadMode.REMOVE, [y], late));
    expect(error?.code).toBe(Code.FailedPrecondition);
    expect(error?.rawMessage).toMatch(
      /before the registry it applies to.*in order.*--allow-older.*unchanged/,
    );
    expect(await current()).toBe(added.snapshotId);
    // A late add (a retried daily file) only makes numbers prohibited: applied, the copy keeps its time.
    const lateAdd = [fresh()];
    const applied = await load(LoadMode.ADD, lateAdd, late);
    expect(timeOf(applied).getTime()).toBe(timeOf(added).getTime());
    expect(await prohibited(applied.snapshotId, lateAdd[0]!)).toBe(true);
    const meantLines = [fresh()];
    const meant = await load(LoadMode.REMOVE, [...meantLines, ...lateAdd], late, { allowOlder: true });
    expect(timeOf(meant).getTime()).toBe(timeOf(added).getTime());
    // Its exact retry (its answer lost), with or without the flag: already applied.
    expect((await load(LoadMode.REMOVE, [...meantLines, ...lateAdd], late)).alreadyApplied).toBe(true);
  });

  // Found by a review (2026-12-05): a removal without as_of had no place in the registry's order, so none
  // of its checks applied. The copy consulted on Feb 1 lists X (it left the registry on Jan 15 and
  // registered again before Feb 1); the backlog's removal file of Jan 15, loaded after it undated, was
  // applied: X, registered, answered safe. A removal is the only load that makes a number safe.
  it('a removal without as_of is refused, whatever its flags; dated, it takes its place in the order', async () => {
    const [x, y] = [fresh(), fresh()];
    const feb1 = new Date(Date.now() - 10 * DAY);
    const jan15 = new Date(Date.now() - 27 * DAY);
    const copy = await load(LoadMode.REPLACE, [x, y], feb1, { allowOlder: true, allowShrink: true });
    for (const flags of [{}, { allowOlder: true, allowRepeat: true, allowShrink: true }]) {
      const undated = await refusal(load(LoadMode.REMOVE, [x], undefined, flags));
      expect(undated?.code).toBe(Code.FailedPrecondition);
      expect(undated?.rawMessage).toMatch(/removal.*as_of.*safe.*registered again.*--as-of.*unchanged/);
    }
    expect(await current()).toBe(copy.snapshotId);
    expect(await prohibited(copy.snapshotId, x)).toBe(true);
    // Dated as what it is, it is older than the copy: refused.
    expect((await refusal(load(LoadMode.REMOVE, [x], jan15)))?.rawMessage).toMatch(/before the registry/);
    expect(await prohibited(copy.snapshotId, x)).toBe(true);
    // A removal published after the copy is applied.
    const removed = await load(LoadMode.REMOVE, [x], new Date(Date.now() - DAY));
    expect(await prohibited(removed.snapshotId, x)).toBe(false);
    expect(await prohibited(removed.snapshotId, y)).toBe(true);
  });

  // Found by a review (2026-12-05) of the change above: with removals no longer dating the copy, they were
  // no longer in order among themselves. Jan 22's removal applied, then N registered again (an undated add),
  // then Jan 20's removal listing N came late: it was applied, and N answered safe.
  it('a removal dated before a removal already applied is refused, though neither dates the copy', async () => {
    const n = fresh();
    const jan1 = new Date(Date.now() - 20 * DAY);
    const copy = await load(LoadMode.REPLACE, [n, fresh()], jan1, { allowOlder: true, allowShrink: true });
    const jan22 = await load(LoadMode.REMOVE, [n], new Date(Date.now() - 5 * DAY));
    expect(timeOf(jan22).getTime()).toBe(timeOf(copy).getTime());
    const again = await load(LoadMode.ADD, [n]);
    expect(await prohibited(again.snapshotId, n)).toBe(true);
    const late = await refusal(load(LoadMode.REMOVE, [n], new Date(Date.now() - 7 * DAY)));
    expect(late?.code).toBe(Code.FailedPrecondition);
    expect(late?.rawMessage).toMatch(/before the registry it applies to/);
    expect(await current()).toBe(again.snapshotId);
    expect(await prohibited(again.snapshotId, n)).toBe(true);
    // The same undated add written by a replica of the release before (no order time of its own): the
    // removal applied before it still orders the late one (a rolling upgrade, a rollback).
    await pool.query('UPDATE registry_mx.snapshots SET order_as_of = NULL WHERE id = $1', [
      Number(again.snapshotId),
    ]);
    expect((await refusal(load(LoadMode.REMOVE, [n], new Date(Date.now() - 7 * DAY))))?.rawMessage).toMatch(
      /before the registry it applies to/,
    );
    // An add dated after the copy's time dates it, though a removal dated later was applied.
    const dated = new Date(Date.now() - 6 * DAY);
    const add = await load(LoadMode.ADD, [fresh()], dated);
    expect(timeOf(add).getTime()).toBe(dated.getTime());
  });

  // Found by reviews (2026-12-03, 2026-12-04): a replace dated before the current copy (last month's file
  // loaded again by mistake, a retried load) was accepted: every number registered since was answered
  // safe and the copy dated back; and without --as-of the re-run was dated now.
  it('a replace dated before the current snapshot, or loaded before and followed by others, is refused unless allow_older', async () => {
    const z = fresh();
    const lastMonth = ['+52 55 1234 5678', fresh()];
    await load(LoadMode.REPLACE, lastMonth, undefined, { allowOlder: true });
    const now = await load(LoadMode.REPLACE, [...lastMonth, z], new Date(Date.now() - DAY), {
      allowOlder: true,
    });
    const older = await refusal(load(LoadMode.REPLACE, lastMonth, new Date(Date.now() - 20 * DAY)));
    expect(older?.code).toBe(Code.FailedPrecondition);
    expect(older?.rawMessage).toMatch(
      /before the registry it applies to.*registered since.*--allow-older.*unchanged/,
    );
    // Last month's file run again without --as-of: the same file, loaded before.
    const rerun = await refusal(load(LoadMode.REPLACE, lastMonth));
    expect(rerun?.code).toBe(Code.FailedPrecondition);
    expect(rerun?.rawMessage).toMatch(
      /loaded before, as snapshot \d+.*registered since.*--allow-older.*unchanged/,
    );
    expect(await current()).toBe(now.snapshotId);
    expect(await prohibited(now.snapshotId, z)).toBe(true);
    // The current load again (its answer lost): already applied. Another file as old as it: not older.
    const retried = await load(LoadMode.REPLACE, [...lastMonth, z], timeOf(now));
    expect(retried).toMatchObject({ alreadyApplied: true, snapshotId: now.snapshotId });
    const sameDay = await load(LoadMode.REPLACE, [...lastMonth, z, fresh()], timeOf(now));
    expect(sameDay.alreadyApplied).toBe(false);
    const back = await load(LoadMode.REPLACE, lastMonth, new Date(Date.now() - 20 * DAY), {
      allowOlder: true,
    });
    expect(await prohibited(back.snapshotId, z)).toBe(false);
    // The current copy's file again without --as-of (a stale file re-run): it would date the copy anew.
    const anew = await refusal(load(LoadMode.REPLACE, lastMonth));
    expect(anew?.rawMessage).toMatch(/same numbers as the current registry.*anew.*--allow-older.*unchanged/);
    expect(await current()).toBe(back.snapshotId);
    expect((await refusal(load(LoadMode.REPLACE, lastMonth, new Date(Date.now() - DAY))))?.code).toBe(
      Code.FailedPrecondition,
    );
    // The registry consulted again and found unchanged: meant, it renews the copy.
    const renewed = await load(LoadMode.REPLACE, lastMonth, undefined, { allowOlder: true });
    expect(renewed.alreadyApplied).toBe(false);
    expect(Math.abs(timeOf(renewed).getTime() - Date.now())).toBeLessThan(60_000);
  });

  // Found by reviews (2026-12-03, 2026-12-04): a delta has no order of its own without an as_of, so a
  // retried one was applied again after later ones: add X, remove X, add X, then the removal retried
  // answered X safe; also after a replace in between, or retried with an --as-of the first run had not.
  it('a delta loaded again after other loads is refused unless allow_repeat; right after itself it is already applied', async () => {
    await load(LoadMode.REPLACE, ['+52 55 1234 5678'], new Date(Date.now() - 3 * DAY), { allowOlder: true });
    const hours = (h: number) => new Date(Date.now() - h * 3_600_000);
    // Dated deltas: the same numbers on other days are other deltas; an older one retried is refused.
    const v = fresh();
    await load(LoadMode.ADD, [v], hours(60));
    await load(LoadMode.REMOVE, [v], hours(48));
    const readded = await load(LoadMode.ADD, [v], hours(36));
    expect(readded.alreadyApplied).toBe(false);
    expect((await refusal(load(LoadMode.REMOVE, [v], hours(48))))?.code).toBe(Code.FailedPrecondition);
    expect(await prohibited(readded.snapshotId, v)).toBe(true);
    // Undated adds: known by their numbers alone (a removal is always dated).
    const x = fresh();
    await load(LoadMode.ADD, [x]);
    const published = hours(30);
    const removed = await load(LoadMode.REMOVE, [x], published);
    const retried = await load(LoadMode.REMOVE, [x], published);
    expect(retried).toMatchObject({ alreadyApplied: true, snapshotId: removed.snapshotId });
    // The same add again is applied: an add only makes numbers prohibited.
    expect((await load(LoadMode.ADD, [x])).alreadyApplied).toBe(false);
    const added = await load(LoadMode.ADD, [x, fresh()]);
    const error = await refusal(load(LoadMode.REMOVE, [x], published));
    expect(error?.code).toBe(Code.FailedPrecondition);
    expect(error?.rawMessage).toMatch(
      new RegExp(`loaded before, as snapshot ${removed.snapshotId},.*undo.*--allow-repeat.*unchanged`),
    );
    // A removal loaded undated (before removals needed an as_of) is known whatever as_of its retry gives.
    await pool.query('UPDATE registry_mx.snapshots SET load_as_of = NULL WHERE id = $1', [
      removed.snapshotId,
    ]);
    expect((await refusal(load(LoadMode.REMOVE, [x], hours(1))))?.code).toBe(Code.FailedPrecondition);
    expect(await current()).toBe(added.snapshotId);
    expect(await prohibited(added.snapshotId, x)).toBe(true);
    // An older copy loaded in between (allow_older) does not make the old removal new.
    await load(LoadMode.REPLACE, ['+52 55 1234 5678', x], hours(40), { allowOlder: true });
    expect((await refusal(load(LoadMode.REMOVE, [x], published)))?.code).toBe(Code.FailedPrecondition);
    const meant = await load(LoadMode.REMOVE, [x], published, { allowRepeat: true });
    expect(await prohibited(meant.snapshotId, x)).toBe(false);
  });

  // Found by the closing review of 2026-12-04: loads committed before loads were identified (the release
  // before; their digest NULL) were not known, so last month's file loaded before the upgrade and run again
  // after it was applied, every number registered since answered safe; the current file's retry with its
  // as_of was applied anew. Their replaces are known by the numbers their tables still hold.
  it('replaces committed before loads were identified are known by their numbers', async () => {
    const z = fresh();
    const lastMonth = ['+52 55 1234 5678', fresh()];
    const broken = await load(
      LoadMode.REPLACE,
      ['+52 55 1234 5678', fresh()],
      new Date(Date.now() - 3 * DAY),
      {
        allowOlder: true,
      },
    );
    await load(LoadMode.REPLACE, lastMonth, new Date(Date.now() - 2 * DAY));
    const yesterday = new Date(Date.now() - DAY);
    const now = await load(LoadMode.REPLACE, [...lastMonth, z], yesterday);
    // What the migration of the upgrade left on the rows of the release before: no identity. And one
    // table gone while its row still names it (a clean-up cut short): its load stays unknown, the others
    // are read back and loads go on.
    await pool.query('UPDATE registry_mx.snapshots SET load_digest = NULL, load_as_of = NULL');
    await pool.query(`DROP TABLE registry_mx.numbers_${broken.snapshotId}`);
    const rerun = await refusal(load(LoadMode.REPLACE, lastMonth));
    expect(rerun?.code).toBe(Code.FailedPrecondition);
    expect(rerun?.rawMessage).toMatch(/loaded before, as snapshot \d+.*--allow-older.*unchanged/);
    const retried = await load(LoadMode.REPLACE, [...lastMonth, z], yesterday);
    expect(retried).toMatchObject({ alreadyApplied: true, snapshotId: now.snapshotId });
    const anew = await refusal(load(LoadMode.REPLACE, [...lastMonth, z]));
    expect(anew?.rawMessage).toMatch(/same numbers as the current registry/);
    expect(await current()).toBe(now.snapshotId);
    expect(await prohibited(now.snapshotId, z)).toBe(true);
    // Each identified once, its as_of its own; deltas (their table is the result, not the file) stay unknown.
    const { rows } = await pool.query(
      `SELECT mode, load_digest IS NOT NULL AS known, (load_as_of IS NOT DISTINCT FROM as_of OR mode <> 'replace') AS dated
         FROM registry_mx.snapshots WHERE table_name IS NOT NULL AND id <> $1 ORDER BY id`,
      [broken.snapshotId],
    );
    for (const row of rows)
      expect(row).toEqual({ mode: row.mode, known: row.mode === 'replace', dated: true });
  });

  it('a copy past its maximum age stays unserved after a delta of one’s own; a fresh replace serves it again', async () => {
    const stale = await load(LoadMode.REPLACE, ['+52 55 1234 5678'], new Date(Date.now() - 40 * DAY), {
      allowOlder: true,
    });
    await swappedTo(stale.snapshotId);
    const refused = async () => {
      const err = await check().catch((e) => e);
      expect(err).toBeInstanceOf(ConnectError);
      expect(err.code).toBe(Code.Unavailable);
      expect(readPublicReason(err)?.reason).toBe('country_service_temporarily_unavailable');
    };
    await refused();
    const y = fresh();
    const added = await load(LoadMode.ADD, [y]);
    await swappedTo(added.snapshotId);
    await refused();
    const renewed = await load(LoadMode.REPLACE, ['+52 55 1234 5678', y]);
    await swappedTo(renewed.snapshotId);
    expect((await check()).outcomes).toEqual([Outcome.PROHIBITED]);
  });

  it('an as_of in the future is refused, the registry unchanged', async () => {
    const { admin } = adapterClients(adapter.address);
    const before = await admin.getRegistryStatus({});
    const err = await load(LoadMode.REPLACE, ['+52 55 1234 5678'], new Date(Date.now() + 3_600_000)).catch(
      (e) => e,
    );
    expect(err).toBeInstanceOf(ConnectError);
    expect(err.code).toBe(Code.InvalidArgument);
    expect((await admin.getRegistryStatus({})).snapshotId).toBe(before.snapshotId);
  });
});
