import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { adapterIdentity, grpcTransport } from '@dnc/kit';
import { registryv1 } from '@dnc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadLocksHeld, loadWhole } from '../support/registry-load.js';
import { startTestStack, type TestStack } from '../support/stack.js';

// Found by a review (2026-12-04): a registry load reads its file's chunks while it holds its country's load
// lock. An uploader that stopped sending (a stalled `curl | dnc-admin registry load`, an operator's laptop
// gone to sleep) while its stream stayed open held the lock without limit on a live adapter: the adapter's
// heartbeat kept the lock's connection busy, and every other load of the country, through any replica, was
// refused as busy. The registry could not be refreshed and went stale. A load now waits for its next chunk at
// most DNC_LOAD_CHUNK_IDLE_MS, then fails, writing nothing, and the lock is released.

const OTHERS = ['gateway', 'admission', 'quota', 'job-scheduler', 'job-worker', 'dashboard'] as const;
const CHUNK_IDLE_MS = 8_000;
const { LoadMode } = registryv1;

describe('a registry load whose uploader stopped sending', () => {
  let stack: TestStack;
  let admin: ReturnType<typeof createClient<typeof registryv1.RegistryAdminService>>;
  let checker: ReturnType<typeof createClient<typeof registryv1.RegistryAdapterService>>;

  beforeAll(async () => {
    stack = await startTestStack({
      label: 'load_stalled',
      countries: ['mx'],
      skip: [...OTHERS],
      env: { DNC_LOAD_CHUNK_IDLE_MS: String(CHUNK_IDLE_MS) },
    });
    const peer = adapterIdentity('mx');
    admin = createClient(
      registryv1.RegistryAdminService,
      grpcTransport(stack.addresses.adapterAdmins.mx!, [], {
        security: await stack.pki.security('operator'),
        peer,
      }),
    );
    checker = createClient(
      registryv1.RegistryAdapterService,
      grpcTransport(stack.addresses.adapters.mx!, [], {
        security: await stack.pki.security('gateway'),
        peer,
      }),
    );
  });

  afterAll(async () => {
    await stack?.teardown();
  });

  const load = (lines: string[], mode = LoadMode.ADD) => loadWhole(admin, 'mx', lines, mode);

  it('the stalled load fails once no chunk came for the bound, writing nothing; the next load goes through', async () => {
    await load(['+52 55 1111 0000'], LoadMode.REPLACE);
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let lastChunkAt = 0;
    const stalledLoad = admin.load(
      (async function* () {
        yield { part: { case: 'header' as const, value: { country: 'mx', mode: LoadMode.ADD } } };
        yield { part: { case: 'chunk' as const, value: { lines: ['+52 55 2222 3333'] } } };
        lastChunkAt = Date.now();
        // The uploader stops sending; its stream stays open.
        await held;
        yield { part: { case: 'chunk' as const, value: { lines: ['+52 55 6666 7777'] } } };
        yield { part: { case: 'end' as const, value: { lines: 2n } } };
      })(),
      { timeoutMs: 120_000 },
    );
    const stalledOutcome = stalledLoad.then(
      () => 'committed',
      (e: unknown) => ConnectError.from(e),
    );
    try {
      // While the stalled load holds the lock, another load is refused as busy.
      await expect.poll(() => lastChunkAt, { timeout: 5_000, interval: 20 }).toBeGreaterThan(0);
      const busy = await load(['+52 55 4444 5555']).catch((e: unknown) => ConnectError.from(e));
      expect(busy).toMatchObject({ code: Code.Aborted });

      // Busy until the stalled load has waited the bound for its next chunk; then the load goes through.
      let answer: unknown;
      for (;;) {
        answer = await load(['+52 55 4444 5555']).catch((e: unknown) => ConnectError.from(e));
        if (!(answer instanceof ConnectError) || answer.code !== Code.Aborted) break;
        if (Date.now() - lastChunkAt > 20_000) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(answer).not.toBeInstanceOf(ConnectError);
      expect(Date.now() - lastChunkAt).toBeGreaterThan(CHUNK_IDLE_MS - 100);
      expect(Date.now() - lastChunkAt).toBeLessThan(CHUNK_IDLE_MS + 8_000);

      // The stalled load failed, telling its uploader why, and nothing of it was written.
      const outcome = await stalledOutcome;
      expect(outcome).toBeInstanceOf(ConnectError);
      expect(outcome).toMatchObject({ code: Code.DeadlineExceeded });
      const message = (outcome as ConnectError).rawMessage;
      expect(message).toMatch(/no chunk/);
      expect(message).toMatch(/unchanged/);
      expect(message).not.toMatch(/2222|3333|\+52/);
    } finally {
      release();
    }
    expect(await stalledOutcome).toBeInstanceOf(ConnectError);
    const { outcomes } = await checker.check({
      country: 'mx',
      phones: ['+52 55 4444 5555', '+52 55 2222 3333', '+52 55 6666 7777', '+52 55 1111 0000'],
    });
    expect(outcomes).toEqual([
      registryv1.Outcome.PROHIBITED,
      registryv1.Outcome.SAFE,
      registryv1.Outcome.SAFE,
      registryv1.Outcome.PROHIBITED,
    ]);
    // The adapter's log says why the load failed, without its numbers.
    const logs = stack.logsOf('adapter-mx');
    expect(logs).not.toMatch(/2222 ?3333|6666 ?7777/);
  }, 60_000);

  // Found by a review (2026-12-04): an uploader's stream reset (it cancelled, its deadline passed, its file
  // could not be read) ends on the server as a clean end would, and the adapter committed the part sent as
  // the whole file: a replace cut short answered every number after it safe. A load now commits only after
  // its end message, its line count right.
  describe('an upload cut short commits nothing', () => {
    const WHOLE = ['+52 55 1111 0000', '+52 55 2222 0000', '+52 55 3333 0000'];
    const registered = async () =>
      (await checker.check({ country: 'mx', phones: WHOLE })).outcomes.every(
        (o) => o === registryv1.Outcome.PROHIBITED,
      );
    const header = {
      part: {
        case: 'header' as const,
        value: { country: 'mx', mode: LoadMode.REPLACE, allowOlder: true, allowShrink: true },
      },
    };
    const loadsRunning = () => loadLocksHeld(stack.databaseUrl);
    const chunk = (lines: string[]) => ({ part: { case: 'chunk' as const, value: { lines } } });

    /** Resolves once the adapter reads this load under the country's lock (the uploader waits for it). */
    let lockSeen = false;
    const underLock = async () => {
      await expect.poll(loadsRunning, { timeout: 10_000, interval: 20 }).toBe(1);
      lockSeen = true;
    };

    async function cutShort(requests: AsyncIterable<registryv1.LoadRequest | object>, timeoutMs = 10_000) {
      await load(WHOLE, LoadMode.REPLACE);
      const before = (await admin.getRegistryStatus({})).snapshotId;
      expect(await registered()).toBe(true);
      lockSeen = false;
      const outcome = await admin.load(requests as AsyncIterable<registryv1.LoadRequest>, { timeoutMs }).then(
        () => 'committed',
        (e: unknown) => ConnectError.from(e),
      );
      // The adapter was reading the load; it may still be working on it when the caller has its error: once
      // no load holds the lock, every number of the whole file is still answered prohibited, from the same
      // snapshot.
      expect(lockSeen).toBe(true);
      await expect.poll(loadsRunning, { timeout: 15_000, interval: 50 }).toBe(0);
      expect(await registered()).toBe(true);
      expect((await admin.getRegistryStatus({})).snapshotId).toBe(before);
      return outcome;
    }

    it('the uploader’s file could not be read after its first chunk (its stream reset)', async () => {
      const outcome = await cutShort(
        (async function* () {
          yield header;
          yield chunk([WHOLE[0]!]);
          await underLock();
          throw new Error('EIO: i/o error, read');
        })(),
      );
      expect(outcome).toBeInstanceOf(ConnectError);
    });

    it('the uploader’s deadline passed while it was sending', async () => {
      const outcome = await cutShort(
        (async function* () {
          yield header;
          yield chunk([WHOLE[1]!]);
          await underLock();
          await new Promise((r) => setTimeout(r, 5_000));
        })(),
        2_500,
      );
      expect(outcome).toMatchObject({ code: Code.DeadlineExceeded });
    });

    it('the end message counts other lines than arrived', async () => {
      const outcome = await cutShort(
        (async function* () {
          yield header;
          yield chunk([WHOLE[2]!, '']);
          await underLock();
          yield { part: { case: 'end' as const, value: { lines: 3n } } };
        })(),
      );
      expect(outcome).toMatchObject({ code: Code.InvalidArgument });
      expect((outcome as ConnectError).rawMessage).toMatch(/counts 3 lines, 2 arrived/);
    });

    it('the stream ended after the chunks, without its end message', async () => {
      const outcome = await cutShort(
        (async function* () {
          yield header;
          yield chunk([WHOLE[0]!]);
          await underLock();
        })(),
      );
      expect(outcome).toMatchObject({ code: Code.InvalidArgument });
      expect((outcome as ConnectError).rawMessage).toMatch(/ended before its end message/);
    });
    it('dnc-admin --expect-lines: a pipe that ended early loads nothing; the whole file loads', async () => {
      await load(WHOLE, LoadMode.REPLACE);
      const before = (await admin.getRegistryStatus({})).snapshotId;
      const args = [
        'registry',
        'load',
        '--country',
        'mx',
        '--file',
        '-',
        '--mode',
        'replace',
        '--allow-older',
      ];
      // The source died after the first line: stdin ends as cleanly as a whole file does.
      const refused = await stack
        .admin([...args, '--expect-lines', '3'], `${WHOLE[0]}\n`)
        .catch((e: unknown) => e as Error);
      expect(refused).toBeInstanceOf(Error);
      expect((refused as Error).message).toMatch(/ended after 1 of the 3 lines expected/);
      await expect.poll(loadsRunning, { timeout: 15_000, interval: 50 }).toBe(0);
      expect(await registered()).toBe(true);
      expect((await admin.getRegistryStatus({})).snapshotId).toBe(before);
      const whole = (await stack.admin([...args, '--expect-lines', '3'], `${WHOLE.join('\n')}\n`)) as {
        registry_size: number;
      };
      expect(whole.registry_size).toBe(3);
    });
  });
});
