import { Code, ConnectError } from '@connectrpc/connect';
import { TcpProxy } from '@dnc/devstack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admitReq, startedHarness } from './harness.js';

// Found by reading the money path (2026-12-05, left open then): every internal deadline travelled as a
// relative time, which counts from the call's arrival. A completion held 700 ms on its way (a stalled
// link, a proxy holding bytes) arrived with its whole time again: admission, and quota behind it, went on
// committing for up to 700 ms after the gateway had answered 503, and when the aborts could not get
// through in time either, the customer was charged for an error (spec: a platform failure "consumes no
// customer quota"). Each completion and commit now also carries the moment its caller stops waiting.
const h = startedHarness();
const proxies: TcpProxy[] = [];

/** A TCP proxy in front of `port` on this host, passing bytes until told otherwise. */
async function proxyTo(port: number): Promise<TcpProxy> {
  const proxy = await TcpProxy.start([{ host: '127.0.0.1', port }]);
  proxies.push(proxy);
  return proxy;
}

let toQuota: TcpProxy;

beforeAll(async () => {
  // A second replica (index 1) that reaches quota through a proxy.
  toQuota = await proxyTo(h.quota.port);
  await h.addInstance({ DNC_QUOTA_ADDR: `http://${toQuota.address}` });
});

afterAll(async () => {
  for (const proxy of proxies) await proxy.close();
});

const LINK_DELAY_MS = 700;
const CALLER_WAITS_MS = 1_000;
/** After the caller gave up, before the old relative deadlines (arrival + 1 s) ran out. */
const ACCOUNT_FREE_AFTER_MS = 1_300;

/** The call failed: past its deadline, or (`codes`) as the service answered a commit it could not make. */
async function expectGaveUp(call: Promise<unknown>, codes = [Code.DeadlineExceeded]): Promise<void> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConnectError);
  expect(codes).toContain((error as ConnectError).code);
}

/** Complete as the gateway sends it: its caller waits `waitsMs`, said as a time and as a moment. */
function completeWithin(
  client: ReturnType<typeof h.via>,
  admissionId: string,
  waitsMs: number,
  callMs = waitsMs,
) {
  const deadlineUnixMs = BigInt(Date.now() + waitsMs);
  return client.complete({ admissionId, timeoutMs: waitsMs, deadlineUnixMs }, { timeoutMs: callMs });
}

describe('a completion held on its way is not committed after its caller gave up', () => {
  // It arrives with 300 ms of its 1 s left, too little for any commit: refused at once. Before, it waited
  // on the account (free at 1.3 s) and committed, 300 ms after its caller had given up.
  it('gateway -> admission: a Complete that arrives 700 ms late commits nothing past its 1 s', async () => {
    const c = await h.customer(['mx']);
    const proxy = await proxyTo(h.instances[0]!.port);
    const gateway = h.via(proxy.port);
    // Admitted through the proxy while it passes: the connection the Complete takes is open.
    const admitted = await gateway.admit(admitReq(c, { inputCount: 10 }));
    const { released } = await h.holdAccount(c.orgId, ACCOUNT_FREE_AFTER_MS);
    proxy.setFault({ kind: 'slow', delayMs: LINK_DELAY_MS });
    await expectGaveUp(completeWithin(gateway, admitted.admissionId, CALLER_WAITS_MS));
    await released;
    // Everything the link held has arrived (the cancel too) and admission has had the time it thought
    // it had: nothing may be charged for the request its caller answered with an error.
    await new Promise((r) => setTimeout(r, LINK_DELAY_MS + 500));
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: 0, reserved: 10 });
    const direct = h.clients(0).admission;
    expect(await direct.abort({ admissionId: admitted.admissionId })).toMatchObject({ completed: false });
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: 0, reserved: 0 });
  });

  // 800 ms each way, 2 s to wait: the completion arrives with 1.2 s left and could commit in time, but its
  // answer would take 800 ms again. Before, the commit waited on the account (free at 1.3 s) and landed;
  // its answer came at 2.1 s, after the caller had given up: charged for an error.
  it('gateway -> admission: a Complete whose answer would come back too late commits nothing', async () => {
    const c = await h.customer(['mx']);
    const proxy = await proxyTo(h.instances[0]!.port);
    const gateway = h.via(proxy.port);
    const admitted = await gateway.admit(admitReq(c, { inputCount: 10 }));
    const { released } = await h.holdAccount(c.orgId, 1_300);
    proxy.setFault({ kind: 'slow', delayMs: 800 });
    await expectGaveUp(completeWithin(gateway, admitted.admissionId, 2_000));
    await released;
    await new Promise((r) => setTimeout(r, 1_300));
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: 0, reserved: 10 });
    const direct = h.clients(0).admission;
    expect(await direct.abort({ admissionId: admitted.admissionId })).toMatchObject({ completed: false });
  });

  // Held 700 ms, then delivered (the proxy holds every byte, then lets them through): admission gives
  // quota its caller's 2 s less 200 ms, quota keeps 100 ms for its answer, so the old bound of the commit's
  // lock wait ended 700 ms after its caller's deadline; the account is free 100 ms after that deadline.
  it("admission -> quota: a CommitMany held 700 ms on its way commits nothing past its caller's time", async () => {
    const callerWaitsMs = 2_000;
    const c = await h.customer(['mx']);
    const replica = h.clients(1).admission;
    // Reserved and one committed through the proxy while it passes: the connection the commit takes is
    // open (a new one's TLS handshake through the slow link alone outlasts the caller's time).
    const warm = await replica.admit(admitReq(c, { inputCount: 1 }));
    await replica.complete({ admissionId: warm.admissionId });
    const admitted = await replica.admit(admitReq(c, { inputCount: 10 }));
    const { released } = await h.holdAccount(c.orgId, callerWaitsMs + 100);
    toQuota.setFault({ kind: 'hang' });
    const held = setTimeout(() => toQuota.setFault({ kind: 'pass' }), LINK_DELAY_MS);
    try {
      await expectGaveUp(
        completeWithin(replica, admitted.admissionId, callerWaitsMs, callerWaitsMs + 2_000),
        // Quota's lock wait ends before the caller's time does (it keeps the 700 ms back for the answer):
        // quota answers its lock timeout as unavailable.
        [Code.DeadlineExceeded, Code.Unavailable],
      );
      await released;
      await new Promise((r) => setTimeout(r, 500));
    } finally {
      clearTimeout(held);
      toQuota.setFault({ kind: 'pass' });
    }
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: 1, reserved: 10 });
    expect(await replica.abort({ admissionId: admitted.admissionId })).toMatchObject({ completed: false });
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: 1, reserved: 0 });
  });
});
