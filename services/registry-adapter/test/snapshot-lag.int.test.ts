import { Code, ConnectError } from '@connectrpc/connect';
import { TcpProxy } from '@dnc/devstack';
import { readPublicReason } from '@dnc/kit';
import { registryv1 } from '@dnc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAdapter } from '../src/index.js';
import { adapterClients, isolatedEnv, loadLines, startTestAdapter } from './support/adapter.js';

const { Outcome, LoadMode } = registryv1;

// Found by a review (2026-12-03): a replica that lost its database kept answering from the snapshot it
// held, for as long as that snapshot was within its maximum age (30 days): the numbers registered since
// (a load through another replica) were answered safe, while discovery still said `serving` and the
// sessions of gateways and workers already open to the pod kept sending it Checks. A replica that has not
// read the current snapshot pointer within DNC_SNAPSHOT_MAX_LAG_MS now answers nothing and says so.
describe('a replica that cannot read the current snapshot pointer stops answering (mx)', () => {
  const env = isolatedEnv('adapter_lag');
  let proxy: TcpProxy;
  let adapter: RunningAdapter;

  beforeAll(async () => {
    const direct = new URL(env.databaseUrl);
    proxy = await TcpProxy.start([{ host: direct.hostname, port: Number(direct.port || 5432) }]);
    const viaProxy = new URL(env.databaseUrl);
    viaProxy.host = proxy.address;
    adapter = await startTestAdapter({ ...env, databaseUrl: viaProxy.toString() }, 'mx', {
      DNC_SNAPSHOT_MAX_LAG_MS: '1500',
    });
  });
  afterAll(async () => {
    await adapter?.shutdown();
    await proxy?.close();
    await env.drop();
  });

  const check = () =>
    adapterClients(adapter.address)
      .adapter.check({ country: 'mx', phones: ['+52 55 1234 5678'] })
      .then(
        (answer) => answer.outcomes,
        (error: unknown) => readPublicReason(ConnectError.from(error))?.reason ?? String(error),
      );
  // What the replica announces in discovery (Describe is audited, in the database it cannot reach).
  const status = () => adapter.provider.state().status;

  it('answers while it reads the pointer; unavailable once it cannot; serving again when it can', async () => {
    await loadLines(adapter.address, 'mx', LoadMode.REPLACE, ['+52 55 1234 5678']);
    await expect.poll(check, { timeout: 5_000 }).toEqual([Outcome.PROHIBITED]);
    expect(status()).toBe('serving');

    proxy.setFault({ kind: 'reset' });
    const cut = Date.now();
    await expect
      .poll(check, { timeout: 10_000, interval: 100 })
      .toBe('country_service_temporarily_unavailable');
    expect(Date.now() - cut).toBeGreaterThanOrEqual(1_000);
    expect(status()).toBe('unavailable');
    const err = await adapterClients(adapter.address)
      .adapter.check({ country: 'mx', phones: ['+52 55 1234 5678'] })
      .catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.Unavailable);

    proxy.setFault({ kind: 'pass' });
    await expect.poll(check, { timeout: 10_000, interval: 100 }).toEqual([Outcome.PROHIBITED]);
    expect(status()).toBe('serving');
  });
});
