import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { connectNats, type NatsConnection, natsNames, openBucket } from '@dnc/kit';
import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalNatsServer } from '../src/nats-server.js';
import { uniqueSuffix } from '../src/stack.js';
import { dropDatabase } from '../src/teardown.js';

// The container image's `migrate` role (the chart's pre-install/pre-upgrade hook, templates/migration-job.yaml)
// as the chart runs it: the schemas, and the JetStream stream and KV buckets as the `provisioner` NATS user.
// Found by a review of the charts (2026-12-03): the hook was given the provisioner's credentials but only
// migrated PostgreSQL, and every service's own user may not create the stream, so an installed platform
// had no DNC_JOBS stream and no discovery buckets: no adapter announced itself, no job was queued.

const RUN = fileURLToPath(new URL('../../../scripts/run.js', import.meta.url));
const USERS = ['admission', 'job-scheduler', 'job-worker', 'registry-adapter-mx'];
const names = natsNames('');
const database = new URL(process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres');
database.pathname = `/dnc_migrate_${uniqueSuffix()}`;
let server: LocalNatsServer;

/** `node scripts/run.js migrate` with the hook's environment (its NATS user replaced by `user`). */
async function migrate(user = 'provisioner'): Promise<{ code: number; out: string }> {
  const { password } = server.credentials(user);
  const env = {
    PATH: process.env['PATH'] ?? '',
    DATABASE_URL: database.toString(),
    NATS_URL: server.url,
    DNC_NATS_USER: user,
    DNC_NATS_PASSWORD: password,
    DNC_JETSTREAM_REPLICAS: '1',
  };
  return promisify(execFile)(process.execPath, [RUN, 'migrate'], { env, timeout: 60_000 }).then(
    ({ stdout }) => ({ code: 0, out: stdout }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({
      code: e.code ?? -1,
      out: `${e.stdout ?? ''}${e.stderr ?? ''}`,
    }),
  );
}

/** A connection as `user` (the server's own password for it), closed after `work`. */
async function as<T>(user: string, work: (nc: NatsConnection) => Promise<T>): Promise<T> {
  const nc = await connectNats(server.url, user, server.credentials(user));
  try {
    return await work(nc);
  } finally {
    await nc.close();
  }
}

const streamExists = (stream: string) =>
  as('provisioner', async (nc) => (await jetstreamManager(nc)).streams.info(stream)).then(
    () => true,
    () => false,
  );

beforeAll(async () => {
  server = await LocalNatsServer.start({
    dir: mkdtempSync(path.join(os.tmpdir(), 'dnc-nats-migrate-')),
    users: USERS,
  });
});

afterAll(async () => {
  await server?.stop();
  await dropDatabase(database.toString()).catch(() => {});
});

describe('the migrate role (Helm hook): schemas and the JetStream objects, as the provisioner', () => {
  it('creates the jobs stream and both buckets, once; the services can then use them', async () => {
    expect(await streamExists(names.jobsStream)).toBe(false);

    const first = await migrate();
    expect(first, first.out).toMatchObject({ code: 0 });

    await as('provisioner', async (nc) => {
      const jsm = await jetstreamManager(nc);
      const stream = await jsm.streams.info(names.jobsStream);
      expect(stream.config.subjects).toEqual([names.jobsSubjects]);
      for (const bucket of [names.adaptersBucket, names.countryStatusBucket])
        expect((await jsm.streams.info(`KV_${bucket}`)).config.allow_rollup_hdrs).toBe(false);
    });
    expect(first.out).toContain('"jetstream":"provisioned"');
    // An adapter announces itself, admission reads the entry: each with its own user.
    await as('registry-adapter-mx', async (nc) =>
      (await openBucket(nc, names.adaptersBucket)).put('mx.i1', '{}'),
    );
    const entry = await as('admission', async (nc) =>
      (await openBucket(nc, names.adaptersBucket)).get('mx.i1'),
    );
    expect(entry?.string()).toBe('{}');

    // The next upgrade's hook runs it again: nothing changes, nothing fails.
    expect(await migrate(), 'second run').toMatchObject({ code: 0 });
  });

  it("refuses to run as a service's own user (it could not create the stream)", async () => {
    const run = await migrate('job-worker');
    expect(run.code).not.toBe(0);
    expect(run.out).toContain('DNC_NATS_USER');
    expect(run.out).not.toContain(server.credentials('job-worker').password);
  });
});
