import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connectNats, type NatsConnection, natsNames, openBucket, provisionJetStream } from '@dnc/kit';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { headers } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalNatsServer } from '../src/nats-server.js';

const PREFIX = 'P_';
const n = natsNames(PREFIX);
const USERS = ['admission', 'job-scheduler', 'job-worker', 'registry-adapter-co', 'registry-adapter-mx'];
let server: LocalNatsServer;
const conns: Record<string, NatsConnection> = {};

const as = (user: string) => conns[user]!;
const refused = (work: Promise<unknown>) =>
  work.then(
    () => 'allowed',
    (e: Error) => (/permission|authorization/i.test(e.message) ? 'refused' : `failed: ${e.message}`),
  );
const putAdapter = (user: string, key: string) =>
  refused(openBucket(as(user), n.adaptersBucket).then((kv) => kv.put(key, '{}')));
const publishJob = (user: string) =>
  refused(jetstream(as(user)).publish(n.jobsSubject('co'), '{"job_id":"j"}', { timeout: 2_000 }));

beforeAll(async () => {
  server = await LocalNatsServer.start({
    dir: mkdtempSync(path.join(os.tmpdir(), 'dnc-nats-')),
    prefix: PREFIX,
    users: USERS,
  });
  const provisioner = await connectNats(server.url, 'provisioner', server.credentials('provisioner'));
  await provisionJetStream(provisioner, PREFIX);
  await provisioner.close();
  for (const u of USERS) conns[u] = await connectNats(server.url, u, server.credentials(u));
});

afterAll(async () => {
  for (const c of Object.values(conns)) await c.close();
  await server?.stop();
});

describe('NATS: each service its own user with the narrowest subject permissions', () => {
  it("nobody connects without credentials, nor with another user's password", async () => {
    expect(await refused(connectNats(server.url, 'anonymous').then((c) => c.close()))).toBe('refused');
    const wrong = { user: 'admission', password: server.credentials('job-worker').password };
    expect(await refused(connectNats(server.url, 'x', wrong).then((c) => c.close()))).toBe('refused');
  });

  it('an adapter announces itself and only its own country in dnc_adapters', async () => {
    expect(await putAdapter('registry-adapter-co', 'co.i1')).toBe('allowed');
    expect(await putAdapter('registry-adapter-co', 'mx.i1')).toBe('refused');
    expect(await putAdapter('registry-adapter-mx', 'co.forged')).toBe('refused');
  });

  // Found by a review (2026-12-03): the KV client creates buckets allowing rollup headers, so a put to an
  // adapter's own key with `Nats-Rollup: all` purged every other country's entries from the bucket.
  it("an adapter's own key cannot carry a rollup that purges the other countries' entries", async () => {
    expect(await putAdapter('registry-adapter-co', 'co.i2')).toBe('allowed');
    const h = headers();
    h.set('Nats-Rollup', 'all');
    const rollup = await jetstream(as('registry-adapter-mx'))
      .publish(`$KV.${n.adaptersBucket}.mx.i1`, '{}', { headers: h, timeout: 2_000 })
      .then(
        () => 'allowed',
        (e: Error) => e.message,
      );
    expect(rollup).toMatch(/rollup/i);
    const kv = await openBucket(as('admission'), n.adaptersBucket);
    expect((await kv.get('co.i2'))?.operation).toBe('PUT');
  });

  it('no other service can write the discovery bucket', async () => {
    for (const user of ['admission', 'job-scheduler', 'job-worker'])
      expect(await putAdapter(user, 'co.forged'), user).toBe('refused');
  });

  it('only the job scheduler publishes work', async () => {
    expect(await publishJob('job-scheduler')).toBe('allowed');
    for (const user of ['admission', 'job-worker', 'registry-adapter-co'])
      expect(await publishJob(user), user).toBe('refused');
  });

  it('no service creates or deletes streams and buckets (the provisioner does)', async () => {
    for (const user of USERS) {
      const jsm = refused(jetstreamManager(as(user)).then((m) => m.streams.delete(n.jobsStream)));
      expect(await jsm, user).toBe('refused');
    }
  });

  it("no service reads another user's replies", async () => {
    const sub = as('job-worker').subscribe('_INBOX_admission.>');
    await as('job-worker').flush();
    // The server refuses the subscription asynchronously and closes it.
    await sub.closed.catch(() => {});
    expect(sub.isClosed()).toBe(true);
  });

  it('each service can do its own work: discovery watch, country status, pulling and acking jobs', async () => {
    const kv = await openBucket(as('admission'), n.adaptersBucket);
    const watch = await kv.watch({ key: '>' });
    const first = await watch[Symbol.asyncIterator]().next();
    expect(first.value?.key).toBe('co.i1');
    watch.stop();
    await (await openBucket(as('admission'), n.countryStatusBucket)).put('co', '{}');
    // The worker reads the maintenance windows admission publishes there, and may not write them.
    const status = await openBucket(as('job-worker'), n.countryStatusBucket);
    expect((await status.get('co'))?.string()).toBe('{}');
    expect(await refused(status.put('co', '{"maintenance_until":null}'))).toBe('refused');
    const jsm = await jetstreamManager(as('job-worker'));
    await jsm.consumers.add(n.jobsStream, {
      durable_name: n.jobsConsumer('co'),
      filter_subject: n.jobsSubject('co'),
      ack_policy: AckPolicy.Explicit,
    });
    const consumer = await jetstream(as('job-worker')).consumers.get(n.jobsStream, n.jobsConsumer('co'));
    const msg = await consumer.next({ expires: 2_000 });
    expect(msg?.json()).toEqual({ job_id: 'j' });
    msg!.working();
    expect(await msg!.ackAck()).toBe(true);
    const info = await (await jetstreamManager(as('job-scheduler'))).consumers.info(
      n.jobsStream,
      n.jobsConsumer('co'),
    );
    expect(info.num_ack_pending).toBe(0);
  });
  // spent-messages.ts: the scheduler hears of a work message spent by max_deliver, reads its job id by its
  // sequence and deletes it; nobody else may delete work.
  it('the job scheduler hears of a spent work message, reads and deletes it; the worker may not delete', async () => {
    const advisories = as('job-scheduler').subscribe(
      `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${n.jobsStream}.*`,
      { max: 1 },
    );
    const jsm = await jetstreamManager(as('job-worker'));
    await jsm.consumers.add(n.jobsStream, {
      durable_name: n.jobsConsumer('mx'),
      filter_subject: n.jobsSubject('mx'),
      ack_policy: AckPolicy.Explicit,
      ack_wait: 1_000_000_000,
      max_deliver: 1,
    });
    const ack = await jetstream(as('job-scheduler')).publish(n.jobsSubject('mx'), '{"job_id":"spent"}');
    const consumer = await jetstream(as('job-worker')).consumers.get(n.jobsStream, n.jobsConsumer('mx'));
    expect((await consumer.next({ expires: 2_000 }))?.json()).toEqual({ job_id: 'spent' });
    await new Promise((r) => setTimeout(r, 1_500));
    // The next request for work lets the spent message go, and JetStream announces it.
    expect(await consumer.next({ expires: 1_000 })).toBeNull();
    for await (const m of advisories) expect(m.json<{ stream_seq: number }>().stream_seq).toBe(ack.seq);
    expect(await refused(jsm.streams.deleteMessage(n.jobsStream, ack.seq))).toBe('refused');
    const scheduler = await jetstreamManager(as('job-scheduler'));
    expect((await scheduler.streams.getMessage(n.jobsStream, { seq: ack.seq }))?.json()).toEqual({
      job_id: 'spent',
    });
    expect(await scheduler.streams.deleteMessage(n.jobsStream, ack.seq)).toBe(true);
  });
});
