import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { connectNats, type KV, type Logger, natsNames, openBucket, provisionJetStream } from '@dnc/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalNatsServer } from '../../../packages/devstack/src/nats-server.js';
import { CountryStatusPublisher } from '../src/country-status.js';
import { Harness } from './harness.js';

const silent = { warn() {}, info() {}, error() {}, debug() {} } as unknown as Logger;

/** What the workers read of a country (DeclaredMaintenance): the window's end, null or the entry gone. */
async function declared(kv: KV, country: string): Promise<string | null | 'no entry'> {
  const e = await kv.get(country);
  if (e?.operation !== 'PUT') return 'no entry';
  return (e.json() as { maintenance_until: string | null }).maintenance_until;
}

// Found by two reviews (2026-12-05): the status of a country reached NATS KV (all the v2 workers read)
// only by SetMaintenance/ClearMaintenance's one publish, logged and forgotten when it failed; nothing
// ever copied PostgreSQL into the bucket again, so a lost publish stayed lost.
describe('country status: PostgreSQL is republished to the KV the workers read, newer never undone', () => {
  const h = new Harness();
  let kv: KV;

  beforeAll(async () => {
    // The first replica republishes only at its start (the interval is 10 minutes).
    await h.start({ DNC_COUNTRY_STATUS_REPUBLISH_MS: '600000' });
    kv = await openBucket(h.nc, natsNames(h.prefix).countryStatusBucket);
  });
  afterAll(() => h.stop());

  // Two replicas' publishes cross: one read PostgreSQL before an operator's change and writes after the
  // change was published. Its write carries the KV revision it saw before reading; it is refused, and
  // it publishes what PostgreSQL says now.
  it('a publish that read PostgreSQL before a change and writes after it never puts the old status back', async () => {
    const { admin } = h.clients();
    await admin.clearMaintenance({ country: 'co' });
    const seen: (string | null)[] = [];
    const watch = await kv.watch({ key: 'co' });
    void (async () => {
      for await (const e of watch)
        if (e.operation === 'PUT')
          seen.push((e.json() as { maintenance_until: string | null }).maintenance_until);
    })();
    let hold: (() => void) | undefined;
    let holding: () => void = () => {};
    const held = new Promise<void>((r) => {
      holding = r;
    });
    const store = h.instances[0]!.stores.maintenance;
    const stale = new CountryStatusPublisher(
      {
        kv,
        countries: ['co'],
        logger: silent,
        async read(country) {
          const until = await store.maintenanceUntil(country);
          if (hold) {
            const release = new Promise<void>((r) => {
              hold = r;
            });
            holding();
            await release;
            hold = undefined;
          }
          return until;
        },
      },
      600_000,
    );
    await stale.publish('co');
    hold = () => {};
    const racing = stale.publish('co');
    await held;
    const until = new Date(Date.now() + 3_600_000);
    await admin.setMaintenance({ country: 'co', until: timestampFromDate(until) });
    expect(await declared(kv, 'co')).toBe(until.toISOString());
    (hold as unknown as () => void)();
    await racing;
    expect(await declared(kv, 'co')).toBe(until.toISOString());
    await new Promise((r) => setTimeout(r, 200));
    watch.stop();
    const first = seen.indexOf(until.toISOString());
    expect(first).toBeGreaterThanOrEqual(0);
    expect(seen.slice(first)).not.toContain(null);
  });

  it('a window whose publish was lost, or undone by an older status, reaches the KV within the interval', async () => {
    const { admin } = h.clients();
    const until = new Date(Date.now() + 3_600_000);
    await admin.setMaintenance({ country: 'ar', until: timestampFromDate(until) });
    // Lost: recorded in PostgreSQL only (the publish never happened), or the entry gone.
    await h.sql(`INSERT INTO admission.maintenance_windows (country, until) VALUES ('mx', $1)`, [until]);
    await kv.delete('mx');
    // Undone: an older status written over the window (a clear published late).
    await kv.put('ar', JSON.stringify({ country: 'ar', maintenance_until: null }));
    // A clear whose publish was lost: the workers still see a window PostgreSQL no longer has.
    await kv.put('es', JSON.stringify({ country: 'es', maintenance_until: until.toISOString() }));
    // Any replica heals them: a second one republishing every 200 ms.
    await h.addInstance({ DNC_COUNTRY_STATUS_REPUBLISH_MS: '200' });
    const now = () => Promise.all(['ar', 'mx', 'es'].map((c) => declared(kv, c)));
    await expect
      .poll(now, { timeout: 3_000, interval: 100 })
      .toEqual([until.toISOString(), until.toISOString(), null]);
    // And again after the first pass: an entry overwritten later is put right by a later pass.
    await kv.put('ar', JSON.stringify({ country: 'ar', maintenance_until: null }));
    await expect.poll(() => declared(kv, 'ar'), { timeout: 3_000, interval: 100 }).toBe(until.toISOString());
  });
});

// In production admission's NATS user may write the bucket but not read it (nats-permissions.ts): the
// republisher learns the key's revision from the refusal of a conditional write, never from a read.
describe('country status under the NATS permissions of the admission user', () => {
  let server: LocalNatsServer;

  afterAll(() => server?.stop());

  it('publishes, learns the revision from a refused write and republishes without reading the bucket', async () => {
    const prefix = 'P_';
    server = await LocalNatsServer.start({
      dir: mkdtempSync(path.join(os.tmpdir(), 'dnc-nats-')),
      prefix,
      users: ['admission', 'job-worker'],
    });
    const provisioner = await connectNats(server.url, 'provisioner', server.credentials('provisioner'));
    await provisionJetStream(provisioner, prefix);
    await provisioner.close();
    const admission = await connectNats(server.url, 'admission', server.credentials('admission'));
    const worker = await connectNats(server.url, 'job-worker', server.credentials('job-worker'));
    try {
      const bucket = natsNames(prefix).countryStatusBucket;
      const kv = await openBucket(admission, bucket);
      const windows = new Map<string, Date>();
      const replica = () =>
        new CountryStatusPublisher(
          { kv, countries: ['co', 'mx'], logger: silent, read: async (c) => windows.get(c) },
          600_000,
        );
      const [a, b] = [replica(), replica()];
      await expect(kv.get('co')).rejects.toThrow(/permission/i);
      const read = await openBucket(worker, bucket);
      await a.republishOnce();
      const until = new Date(Date.now() + 60_000);
      windows.set('co', until);
      // b has never written: its first write is refused (revision unknown), then lands.
      await b.publish('co');
      expect(await declared(read, 'co')).toBe(until.toISOString());
      windows.delete('co');
      await a.publish('co');
      expect(await declared(read, 'co')).toBe(null);
      expect(await declared(read, 'mx')).toBe(null);
    } finally {
      await admission.close();
      await worker.close();
    }
  });
});
