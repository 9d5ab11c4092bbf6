// Registry adapters as their own processes (scripts/run.js registry-adapter), driven by dnc-admin and
// observed through discovery, as operators and the other services see them (issue 4).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { AdapterDirectory, connectNats, createLogger, natsNames, openBucket } from '@dnc/kit';
import type { NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, startTestStack, TEST_NATS_URL, type TestStack } from '../support/stack.js';

const FIXTURES = path.join(ROOT, 'services/registry-adapter/conformance/fixtures');
const ADAPTER_ONLY = ['gateway', 'admission', 'quota', 'job-scheduler', 'job-worker'] as const;

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function conformance(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [path.join(ROOT, 'services/registry-adapter/conformance/cli.mjs'), ...args],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
    });
    child.stderr.on('data', (c) => {
      out += c;
    });
    child.once('exit', (code) => resolve({ code, out }));
  });
}

describe('registry adapters as processes: dnc-admin, discovery, restarts, conformance', () => {
  let stack: TestStack;
  let nc: NatsConnection;
  let directory: AdapterDirectory;

  beforeAll(async () => {
    stack = await startTestStack({
      label: 'adapters',
      skip: [...ADAPTER_ONLY],
      processEnv: {
        // co starts from a seed file (the local stack's way to have a registry at once); mx and ar start empty.
        'adapter-co': { DNC_REGISTRY_SEED_FILE: path.join(FIXTURES, 'co.txt') },
      },
    });
    nc = await connectNats(TEST_NATS_URL, 'adapter-e2e');
    directory = new AdapterDirectory(
      await openBucket(nc, natsNames(stack.natsPrefix).adaptersBucket),
      createLogger('test', 'silent'),
    );
    await directory.start();
  });
  afterAll(async () => {
    directory?.stop();
    await nc?.close();
    await stack?.teardown();
  });

  const mx = () => stack.addresses.adapters['mx']!;
  /** The adapter's admin listener: Load, status, drills (operator, audited). */
  const mxAdmin = () => stack.addresses.adapterAdmins['mx']!;
  const registryStatus = async () =>
    (await stack.admin(['registry', 'status', '--country', 'mx', '--address', mxAdmin()])) as Record<
      string,
      unknown
    >;

  it('an adapter without a registry announces itself unavailable; a load makes it serving', async () => {
    await until('mx entry', () => directory.instances('mx').find((e) => e.status === 'unavailable'));
    const file = [
      '# registry file',
      '+52 55 1234 5678',
      '044 81 8123 4567',
      'not a number',
      '55 1234 5678',
    ].join('\n');
    // A line that is not a number of the country refuses the load unless allowed (it may be a registered
    // subscriber the rules do not read): nothing is loaded, the adapter stays unavailable.
    await expect(
      stack.admin(
        ['registry', 'load', '--country', 'mx', '--file', '-', '--expect-lines', '5', '--address', mxAdmin()],
        file,
      ),
    ).rejects.toThrow(/1 line is not a number of this country \(line 4\)/);
    const loaded = (await stack.admin(
      [
        ...['registry', 'load', '--country', 'mx', '--file', '-', '--expect-lines', '5'],
        ...['--max-rejected', '1', '--address', mxAdmin()],
      ],
      file,
    )) as Record<string, unknown>;
    expect(loaded).toMatchObject({
      country: 'mx',
      mode: 'replace',
      lines_read: 4,
      accepted: 3,
      rejected: 1,
      registry_size: 2,
    });
    const entry = await until('mx serving', () =>
      directory
        .instances('mx')
        .find((e) => e.status === 'serving' && e.snapshot_id === loaded['snapshot_id']),
    );
    expect(entry).toMatchObject({ address: mx(), registry_size: 2 });
    expect(directory.pick('mx')?.address).toBe(mx());

    const status = await registryStatus();
    expect(status).toMatchObject({ country: 'mx', registry_size: 2, snapshot_id: loaded['snapshot_id'] });
    expect(typeof status['snapshot_time']).toBe('string');
  });

  it('dnc-admin adds and removes through the same normalization; a delta keeps its base’s time (an add unless --as-of)', async () => {
    const base = await registryStatus();
    /** `dnc-admin registry load` of mx with these flags, the file on stdin (its lines counted). */
    const mxLoad = async (flags: string[], file: string) =>
      (await stack.admin(
        [
          ...['registry', 'load', '--country', 'mx', ...flags, '--file', '-'],
          ...['--expect-lines', String(file.split('\n').filter(Boolean).length), '--address', mxAdmin()],
        ],
        file,
      )) as Record<string, unknown>;
    const added = await mxLoad(['--mode', 'add'], '+52 1 33 3123 4567\n');
    expect(added['registry_size']).toBe(3);
    expect(added['snapshot_time']).toBe(base['snapshot_time']);
    // A delta the registry published a second after the copy (deltas apply in order: never before it).
    const published = new Date(Date.parse(String(base['snapshot_time'])) + 1_000).toISOString();
    const removal = ['--mode', 'remove', '--as-of', published];
    const removed = await mxLoad(removal, '(55) 1234-5678\n');
    expect(removed['registry_size']).toBe(2);
    // A removal brings no registration made since the copy: the copy keeps its time, however it is dated.
    expect(removed['snapshot_time']).toBe(base['snapshot_time']);
    expect(removed['already_applied']).toBe(false);
    // The removal run again (its answer lost): answered as the load it repeats, nothing committed.
    const retried = await mxLoad(removal, '(55) 1234-5678\n');
    expect(retried).toMatchObject({ already_applied: true, snapshot_id: removed['snapshot_id'] });
    // After another delta, the same removal is refused: it would undo it. --allow-repeat when it is meant.
    await mxLoad(['--mode', 'add'], '+52 55 1234 5678\n');
    await expect(mxLoad(removal, '(55) 1234-5678\n')).rejects.toThrow(
      /loaded before, as snapshot .*--allow-repeat.*unchanged/,
    );
    expect((await registryStatus())['registry_size']).toBe(3);
    // An older copy of the whole registry is refused unless --allow-older.
    await expect(mxLoad(['--as-of', '2026-01-01T00:00:00Z'], '+52 55 1234 5678\n')).rejects.toThrow(
      /before the registry it applies to.*--allow-older.*unchanged/,
    );
    const repeated = await mxLoad([...removal, '--allow-repeat'], '(55) 1234-5678\n');
    expect(repeated).toMatchObject({ already_applied: false, registry_size: 2 });
    // A time without its zone would be read in the operator's local zone: a usage error, nothing sent.
    await expect(mxLoad(['--as-of', '2026-11-30T12:00'], '+52 55 1234 5678\n')).rejects.toThrow(
      /--as-of must be an ISO 8601 time with its zone/,
    );
  });

  it('drills change the discovery status within seconds, and --clear restores it', async () => {
    const drill = await stack.admin([
      'adapter',
      'drill',
      '--country',
      'mx',
      '--fail',
      'maintenance',
      '--address',
      mxAdmin(),
    ]);
    expect(drill).toMatchObject({ country: 'mx', failure: 'maintenance' });
    await until(
      'mx maintenance',
      () => directory.instances('mx').find((e) => e.status === 'maintenance'),
      5_000,
    );
    expect(directory.pick('mx')).toBeUndefined();
    await stack.admin(['adapter', 'drill', '--country', 'mx', '--clear', '--address', mxAdmin()]);
    await until('mx serving again', () => directory.pick('mx'), 5_000);
    await expect(
      stack.admin(['adapter', 'drill', '--country', 'mx', '--address', mxAdmin()]),
    ).rejects.toThrow(/--latency-ms|--fail|--clear/);
  });

  it('a killed adapter goes stale, a stopped one withdraws at once, and a restart serves the stored snapshot', async () => {
    const before = directory.instances('mx')[0]!;
    await stack.kill('adapter-mx');
    await until('mx stale', () => (directory.instances('mx').length === 0 ? true : undefined), 15_000);
    await stack.start('adapter-mx');
    const back = await until('mx back', () => directory.pick('mx'), 10_000).catch((error) => {
      throw new Error(
        `${error.message}: ${JSON.stringify(directory.instances('mx'))}\n${stack.logsOf('adapter-mx').slice(-3000)}`,
      );
    });
    expect(back.instance_id).not.toBe(before.instance_id);
    expect(back.snapshot_id).toBe(before.snapshot_id);
    const stoppedAt = Date.now();
    await stack.stop('adapter-mx');
    await until('mx withdrawn', () => (directory.instances('mx').length === 0 ? true : undefined), 5_000);
    expect(Date.now() - stoppedAt).toBeLessThan(5_000);
    await stack.start('adapter-mx');
  });

  it('a seeded adapter passes the conformance kit from its own CLI', async () => {
    const co = stack.addresses.adapters['co']!;
    const r = await conformance([
      '--address',
      co.replace('http://', ''),
      '--country',
      'co',
      '--drills',
      '--json',
      // Mutual TLS as the platform calls it: Check as a gateway, Describe/Load/drills as the operator.
      '--admin-address',
      stack.addresses.adapterAdmins['co']!.replace('http://', ''),
      '--tls-dir',
      stack.pki.dirOf('gateway'),
      '--operator-tls-dir',
      stack.pki.dirOf('operator'),
    ]);
    const report = JSON.parse(r.out) as { passed: boolean; results: { ok: boolean; title: string }[] };
    expect(report.results.filter((x) => !x.ok)).toEqual([]);
    expect(report.passed).toBe(true);
    expect(r.code).toBe(0);
  });

  it('logs hold no phone number', () => {
    expect(stack.logs()).not.toMatch(/5512345678|8181234567|3331234567|3001234567/);
  });
});
