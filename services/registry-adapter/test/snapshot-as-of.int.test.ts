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

  const load = (mode: registryv1.LoadMode, lines: string[], asOf?: Date) => {
    const { admin } = adapterClients(adapter.address);
    async function* requests() {
      yield {
        part: {
          case: 'header' as const,
          value: { country: 'mx', mode, ...(asOf ? { asOf: timestampFromDate(asOf) } : {}) },
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
    const older = await load(LoadMode.REPLACE, ['+52 55 1234 5678'], tenDays);
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
    const current = await load(LoadMode.REPLACE, ['+52 55 1234 5678'], new Date(Date.now() - 2 * DAY));
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

  it('a copy past its maximum age stays unserved after a delta of one’s own; a fresh replace serves it again', async () => {
    const stale = await load(LoadMode.REPLACE, ['+52 55 1234 5678'], new Date(Date.now() - 40 * DAY));
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
