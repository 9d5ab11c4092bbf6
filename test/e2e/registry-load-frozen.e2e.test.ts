import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { adapterIdentity, grpcTransport } from '@dnc/kit';
import { registryv1 } from '@dnc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadLocksHeld, loadWhole } from '../support/registry-load.js';
import { startTestStack, type TestStack } from '../support/stack.js';

// Found by a review (2026-12-04): a registry load holds its country's load lock (a PostgreSQL session
// advisory lock) for as long as its connection lives. An adapter frozen in the middle of a load (SIGSTOP, a
// stalled node) kept its connection open, its kernel answering TCP keepalives, for hours, and every other
// replica answered "busy" to every load of that country meanwhile: the registry could not be refreshed, and
// went stale. The load's connection now tells PostgreSQL to close it once idle (DNC_LOAD_LOCK_IDLE_MS), and
// the live process keeps it busy meanwhile. Two mx adapter processes here; the one holding the lock is frozen.

const OTHERS = ['gateway', 'admission', 'quota', 'job-scheduler', 'job-worker', 'dashboard'] as const;
const IDLE_MS = 3_000;
const { LoadMode } = registryv1;

describe('a registry load whose adapter froze while holding the load lock', () => {
  let stack: TestStack;
  let admins: ReturnType<typeof createClient<typeof registryv1.RegistryAdminService>>[];
  let checker: ReturnType<typeof createClient<typeof registryv1.RegistryAdapterService>>;

  beforeAll(async () => {
    stack = await startTestStack({
      label: 'load_frozen',
      countries: ['mx'],
      skip: [...OTHERS],
      replicas: { adapter: 2 },
      env: { DNC_LOAD_LOCK_IDLE_MS: String(IDLE_MS) },
    });
    const operator = await stack.pki.security('operator');
    const peer = adapterIdentity('mx');
    admins = stack.addresses.adapterReplicaAdmins.mx!.map((address) =>
      createClient(registryv1.RegistryAdminService, grpcTransport(address, [], { security: operator, peer })),
    );
    checker = createClient(
      registryv1.RegistryAdapterService,
      grpcTransport(stack.addresses.adapterReplicas.mx![1]!, [], {
        security: await stack.pki.security('gateway'),
        peer,
      }),
    );
    expect(admins).toHaveLength(2);
  });

  afterAll(async () => {
    stack?.child('adapter-mx')?.kill('SIGCONT');
    await stack?.teardown();
  });

  const load = (i: number, lines: string[], mode = LoadMode.ADD) => loadWhole(admins[i]!, 'mx', lines, mode);

  it('the other replica loads once the frozen one’s connection has been idle for the bound; the frozen load fails', async () => {
    await load(0, ['+52 55 1111 0000'], LoadMode.REPLACE);
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    // The first replica takes the lock and waits for the rest of its file, as a load reading a large file does.
    const frozenLoad = admins[0]!.load(
      (async function* () {
        yield { part: { case: 'header' as const, value: { country: 'mx', mode: LoadMode.ADD } } };
        yield { part: { case: 'chunk' as const, value: { lines: ['+52 55 2222 3333'] } } };
        await held;
        yield { part: { case: 'end' as const, value: { lines: 1n } } };
      })(),
      { timeoutMs: 120_000 },
    );
    const frozenOutcome = frozenLoad.then(
      () => 'committed',
      (e: unknown) => ConnectError.from(e),
    );
    // The lock is taken (by that load: nothing else loads); the other replica is refused as busy.
    await expect.poll(() => loadLocksHeld(stack.databaseUrl), { timeout: 5_000, interval: 50 }).toBe(1);
    const busy = await load(1, ['+52 55 4444 5555']).catch((e: unknown) => ConnectError.from(e));
    expect(busy).toMatchObject({ code: Code.Aborted });
    expect(stack.child('adapter-mx')?.kill('SIGSTOP')).toBe(true);
    const frozenAt = Date.now();

    // Busy while the frozen replica's connection lasts; then the load goes through.
    let answer: unknown;
    for (;;) {
      answer = await load(1, ['+52 55 4444 5555']).catch((e: unknown) => ConnectError.from(e));
      if (!(answer instanceof ConnectError) || answer.code !== Code.Aborted) break;
      if (Date.now() - frozenAt > 30_000) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(answer).not.toBeInstanceOf(ConnectError);
    // Not before its connection was idle for most of the bound (a heartbeat every third of it), nor long after.
    expect(Date.now() - frozenAt).toBeGreaterThan((IDLE_MS * 2) / 3 - 100);
    expect(Date.now() - frozenAt).toBeLessThan(IDLE_MS + 10_000);

    // The frozen replica resumes: its connection is gone, and its load fails without writing anything.
    stack.child('adapter-mx')?.kill('SIGCONT');
    release();
    const outcome = await frozenOutcome;
    expect(outcome).toBeInstanceOf(ConnectError);
    // Past two snapshot polls of the replica asked (a load committed after the resume would be served by now).
    await new Promise((r) => setTimeout(r, 2_500));
    await expect
      .poll(
        async () =>
          (
            await checker.check({
              country: 'mx',
              phones: ['+52 55 4444 5555', '+52 55 2222 3333', '+52 55 1111 0000'],
            })
          ).outcomes,
        { timeout: 10_000, interval: 200 },
      )
      .toEqual([registryv1.Outcome.PROHIBITED, registryv1.Outcome.SAFE, registryv1.Outcome.PROHIBITED]);
  }, 90_000);
});
