import { type PrivateServer, privateNats } from '@dnc/devstack';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AdapterDirectory,
  type AdapterEntry,
  announceAdapter,
  ENTRY_CLOCK_SKEW_MS,
  REPLAYED_AFTER_MS,
  STALE_AFTER_MS,
} from '../src/discovery.js';
import { connectNats, type NatsConnection, natsNames, openBucket, provisionJetStream } from '../src/nats.js';

// Found by a review (2026-12-03): an entry's freshness was its own `updated_at`, with no bound. An adapter
// whose clock runs ahead (or a compromised one) that signed `serving` an hour ahead and then died stayed
// "fresh" for that hour in every admission and worker (a KV entry's expiry is not seen by a watch): v1
// calls went to a dead address and the country's maintenance status was masked. Freshness is now bounded
// by the NATS server's time of the write. A real nats-server; the directory is asked about a later time.
let nats: PrivateServer;
let nc: NatsConnection;
const names = natsNames('T_clock_');

const entry = (id: string, updatedAt: number): AdapterEntry => ({
  country: 'mx',
  instance_id: id,
  address: `127.0.0.1:6${id.length}001`,
  version: '1',
  status: 'serving',
  snapshot_id: 's1',
  registry_size: 1,
  updated_at: new Date(updatedAt).toISOString(),
});

beforeAll(async () => {
  nats = await privateNats();
  nc = await connectNats(nats.url, 'discovery-clock-test');
  await provisionJetStream(nc, 'T_clock_');
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

describe('an adapter entry dated ahead of its write', () => {
  it('is fresh as long as an honest one written at the same moment, plus the allowed skew, not until its own date', async () => {
    const kv = await openBucket(nc, names.adaptersBucket);
    const directory = new AdapterDirectory(kv, pino({ level: 'silent' }));
    await directory.start();
    try {
      const now = Date.now();
      await announceAdapter(kv, entry('honest', now));
      await announceAdapter(kv, entry('ahead', now + 3_600_000));
      const ids = (at?: number) =>
        directory
          .instances('mx', at)
          .map((e) => e.instance_id)
          .sort();
      await expect.poll(() => ids(), { timeout: 5_000 }).toEqual(['ahead', 'honest']);
      // Just past the honest entry's staleness, within the skew: the one dated ahead is still offered.
      expect(ids(now + STALE_AFTER_MS + 1_000)).toEqual(['ahead']);
      // Past staleness plus the skew (plus this test's own latency): neither, though one says it is an
      // hour from now.
      expect(ids(Date.now() + STALE_AFTER_MS + ENTRY_CLOCK_SKEW_MS + 1_000)).toEqual([]);
      expect(directory.pick('mx')).toBeDefined();
    } finally {
      directory.stop();
    }
  });
});

describe("an adapter entry dated behind its write (the adapter's clock runs behind)", () => {
  it('is fresh while the adapter keeps writing, and stale STALE_AFTER_MS after its last write', async () => {
    // Found by a review of the clocks (2026-12-03): freshness was judged on the writer's clock only, so
    // an adapter 10 s behind looked stale on every heartbeat and its country was unavailable here.
    const kv = await openBucket(nc, names.adaptersBucket);
    const directory = new AdapterDirectory(kv, pino({ level: 'silent' }));
    await directory.start();
    try {
      const behind = () => entry('behind', Date.now() - 10_000);
      const ids = (at?: number) =>
        directory
          .instances('mx', at)
          .map((e) => e.instance_id)
          .filter((id) => id === 'behind');
      // Its heartbeats, as the announcer writes them (every ADAPTER_HEARTBEAT_MS; faster here).
      for (let i = 0; i < 3; i++) {
        await announceAdapter(kv, behind());
        await new Promise((r) => setTimeout(r, 300));
      }
      await expect.poll(() => ids(), { timeout: 5_000 }).toEqual(['behind']);
      const lastWrite = Date.now();
      await announceAdapter(kv, behind());
      await expect.poll(() => ids(lastWrite + STALE_AFTER_MS - 500), { timeout: 5_000 }).toEqual(['behind']);
      // It stops writing (it died): stale on this process's clock too.
      expect(ids(Date.now() + STALE_AFTER_MS + 1_000)).toEqual([]);
    } finally {
      directory.stop();
    }
  });

  // Found by a review of internal trust (2026-12-03): a live write was fresh on the reader's clock
  // whatever its own date, so an old signed entry written again (by someone holding the adapter's NATS
  // credentials, the adapter stopped) offered a dead or out-of-date adapter as serving.
  it(`a live write dated more than ${REPLAYED_AFTER_MS / 1000} s behind (an old entry written again) is stale at once`, async () => {
    const kv = await openBucket(nc, names.adaptersBucket);
    const directory = new AdapterDirectory(kv, pino({ level: 'silent' }));
    await directory.start();
    try {
      const ids = () => directory.instances('mx').map((e) => e.instance_id);
      // The adapter's heartbeat, seen live by the watch.
      await announceAdapter(kv, entry('victim', Date.now()));
      await expect.poll(ids, { timeout: 5_000 }).toContain('victim');
      // It stops; its entry of a while ago is written again under its key: stale at once, not fresh for
      // STALE_AFTER_MS (6 s) as a heartbeat would be.
      await announceAdapter(kv, entry('victim', Date.now() - REPLAYED_AFTER_MS - 5_000));
      await expect.poll(ids, { timeout: STALE_AFTER_MS / 2 }).not.toContain('victim');
    } finally {
      directory.stop();
    }
  });

  it("read from a watch's replay (a write of any age) is judged on the writer's clock, as before", async () => {
    const kv = await openBucket(nc, names.adaptersBucket);
    await announceAdapter(kv, entry('replayed', Date.now() - 10_000));
    const directory = new AdapterDirectory(kv, pino({ level: 'silent' }));
    await directory.start();
    try {
      await new Promise((r) => setTimeout(r, 500));
      expect(directory.instances('mx').map((e) => e.instance_id)).not.toContain('replayed');
    } finally {
      directory.stop();
    }
  });
});
