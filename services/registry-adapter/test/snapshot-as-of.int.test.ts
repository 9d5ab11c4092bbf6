import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@connectrpc/connect';
import { readPublicReason } from '@dnc/kit';
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

  beforeAll(async () => {
    adapter = await startTestAdapter(env, 'mx');
  });
  afterAll(async () => {
    await adapter?.shutdown();
    await env.drop();
  });

  const load = (
    mode: registryv1.LoadMode,
    lines: string[],
    asOf?: Date,
    allow: { allowOlder?: boolean; allowRepeat?: boolean } = {},
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

  it('an add or remove keeps its base’s time, or takes the one it gives', async () => {
    const base = timeOf(await adapterClients(adapter.address).admin.getRegistryStatus({}));
    const added = await load(LoadMode.ADD, ['+52 33 3123 4567']);
    expect(timeOf(added).getTime()).toBe(base.getTime());
    const removed = await load(LoadMode.REMOVE, ['+52 33 3123 4567']);
    expect(timeOf(removed).getTime()).toBe(base.getTime());
    const published = new Date(Date.now() - 2 * DAY);
    const delta = await load(LoadMode.ADD, ['+52 33 3123 4567'], published);
    expect(timeOf(delta).getTime()).toBe(published.getTime());
  });

  // Found by a review (2026-12-03): a delta dated before the copy it applied to (a retried or replayed
  // older delta) was applied: a number added since was removed again (answered safe) and the copy dated back.
  it('a delta dated before the current snapshot is refused; the registry is unchanged', async () => {
    const current = await load(LoadMode.REPLACE, ['+52 55 1234 5678'], new Date(Date.now() - 2 * DAY), {
      allowOlder: true,
    });
    const added = await load(LoadMode.ADD, ['+52 33 3123 4567'], new Date(Date.now() - DAY));
    const late = new Date(Date.now() - 3 * DAY);
    for (const mode of [LoadMode.REMOVE, LoadMode.ADD]) {
      const error = await load(mode, ['+52 33 3123 4567'], late).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(error?.code).toBe(Code.FailedPrecondition);
      expect(error?.rawMessage).toMatch(/before the registry it applies to.*in order.*unchanged/);
    }
    const status = await adapterClients(adapter.address).admin.getRegistryStatus({});
    expect(status.snapshotId).toBe(added.snapshotId);
    expect(current.snapshotId).not.toBe(added.snapshotId);
  });

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

  // Found by a review (2026-12-03): a replace dated before the current copy (last month's file loaded
  // again by mistake, a retried load) was accepted: every number registered since was answered safe and
  // the copy dated back.
  it('a replace dated before the current snapshot is refused unless allow_older; the registry is unchanged', async () => {
    const lastMonth = ['+52 55 1234 5678'];
    const current = await load(
      LoadMode.REPLACE,
      [...lastMonth, '+52 33 3123 4567'],
      new Date(Date.now() - DAY),
    );
    const error = await refusal(load(LoadMode.REPLACE, lastMonth, new Date(Date.now() - 20 * DAY)));
    expect(error?.code).toBe(Code.FailedPrecondition);
    expect(error?.rawMessage).toMatch(
      /before the registry it applies to.*registered since.*--allow-older.*unchanged/,
    );
    expect((await adapterClients(adapter.address).admin.getRegistryStatus({})).snapshotId).toBe(
      current.snapshotId,
    );
    expect(await prohibited(current.snapshotId, '+52 33 3123 4567')).toBe(true);
    // As old as the current one: the same consultation loaded again (another release's rules).
    const same = await load(LoadMode.REPLACE, [...lastMonth, '+52 33 3123 4567'], timeOf(current));
    expect(same.snapshotId).not.toBe(current.snapshotId);
    const back = await load(LoadMode.REPLACE, lastMonth, new Date(Date.now() - 20 * DAY), {
      allowOlder: true,
    });
    expect(await prohibited(back.snapshotId, '+52 33 3123 4567')).toBe(false);
  });

  // Found by a review (2026-12-03): a delta has no order of its own without an as_of, so a retried one was
  // applied again after later ones: add X, remove X, add X, then the removal retried answered X safe.
  it('a delta loaded again after others is refused unless allow_repeat; right after itself it is already applied', async () => {
    const x = '+52 81 8123 4567';
    await load(LoadMode.REPLACE, ['+52 55 1234 5678'], new Date(Date.now() - 2 * DAY), { allowOlder: true });
    await load(LoadMode.ADD, [x]);
    const removed = await load(LoadMode.REMOVE, [x]);
    const retried = await load(LoadMode.REMOVE, [x]);
    expect(retried.alreadyApplied).toBe(true);
    expect(retried.snapshotId).toBe(removed.snapshotId);
    // The same add again is a repeat too; one with another number besides is another delta.
    expect((await refusal(load(LoadMode.ADD, [x])))?.code).toBe(Code.FailedPrecondition);
    const added = await load(LoadMode.ADD, [x, '+52 55 2222 3333']);
    expect(added.alreadyApplied).toBe(false);
    const error = await refusal(load(LoadMode.REMOVE, [x]));
    expect(error?.code).toBe(Code.FailedPrecondition);
    expect(error?.rawMessage).toMatch(
      new RegExp(`applied before, as snapshot ${removed.snapshotId}.*--allow-repeat.*unchanged`),
    );
    expect(await prohibited(added.snapshotId, x)).toBe(true);
    // Dated: the same numbers published on another day are another delta; the same day's, a repeat.
    const published = new Date(Date.now() - DAY);
    const dated = await load(LoadMode.REMOVE, [x], published);
    await load(LoadMode.ADD, [x], undefined, { allowRepeat: true });
    expect((await refusal(load(LoadMode.REMOVE, [x], published)))?.code).toBe(Code.FailedPrecondition);
    const again = await load(LoadMode.REMOVE, [x], published, { allowRepeat: true });
    expect(again.snapshotId).not.toBe(dated.snapshotId);
    expect(await prohibited(again.snapshotId, x)).toBe(false);
    // A replace starts the count again: the same delta after it is new.
    await load(LoadMode.REPLACE, ['+52 55 1234 5678']);
    expect((await load(LoadMode.REMOVE, [x])).alreadyApplied).toBe(false);
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
    const added = await load(LoadMode.ADD, ['+52 81 8123 4567']);
    await swappedTo(added.snapshotId);
    await refused();
    const fresh = await load(LoadMode.REPLACE, ['+52 55 1234 5678', '+52 81 8123 4567']);
    await swappedTo(fresh.snapshotId);
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
