import { checkInvariants, formatViolations, TcpProxy } from '@dnc/devstack';
import { admissionv1 } from '@dnc/proto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { admitReq, Harness, outcome } from './harness.js';

// Quota reaches PostgreSQL through a fault proxy; admission and the test reach it directly. A reserve
// can then take effect in the ledger while its answer is lost with the connection (what a PostgreSQL
// restart or a dropped connection does right after a commit): quota answers the outage as
// `platform_failure`, and admission must not take that for "nothing was reserved".

const h = new Harness();
let proxy: TcpProxy;

beforeAll(async () => {
  const direct = new URL(h.databaseUrl);
  proxy = await TcpProxy.start([{ host: direct.hostname, port: Number(direct.port || 5432) }]);
  const viaProxy = new URL(h.databaseUrl);
  viaProxy.host = proxy.address;
  await h.start({}, viaProxy.toString(), { scheduler: true });
  await h.adapter('mx');
});

afterAll(async () => {
  await h.stop();
  await proxy.close();
});

afterEach(async () => {
  proxy.setFault({ kind: 'pass' });
  const violations = await checkInvariants({ databaseUrl: h.databaseUrl }, { settleMs: 5_000 });
  expect(violations, formatViolations(violations)).toEqual([]);
});

async function openReservations(orgId: string): Promise<number> {
  const r = await h.sql(
    "SELECT count(*)::int AS n FROM quota.reservations WHERE org_id = $1 AND state = 'reserved'",
    [orgId],
  );
  return r.rows[0].n as number;
}

/** Open connections quota's pool holds before the mute: more than its health probe can take meanwhile. */
const WARM_CONNECTIONS = 4;

async function until(what: string, check: () => Promise<boolean>, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.each([
  ['v1', admissionv1.RequestKind.SYNC],
  ['v2', admissionv1.RequestKind.JOB],
])('%s: a reserve committed whose answer was lost', (_label, kind) => {
  it('is released: the ledger holds nothing for the failed admission and the key is free again', async () => {
    const { admission } = h.clients();
    const c = await h.customer(['mx']);
    const req = admitReq(c, { inputCount: 1_639, kind });

    // The reserve reaches PostgreSQL (over a connection quota's pool holds open: a new one could not
    // even log in) and commits; its answer does not come back. Once the reservation is in the ledger,
    // every connection of quota's pool is cut.
    //
    // Quota's health probe (`SELECT 1` every second) takes an idle connection of the same pool: under
    // the mute its answer never comes, and that connection stays taken. With one connection open, a
    // probe that fires between the mute and the reserve leaves the reserve only a new connection, which
    // cannot log in (a CI run failed so). The pool holds several open connections first, so a probe
    // cannot take the last one.
    await until(`quota's pool holds ${WARM_CONNECTIONS} open connections`, async () => {
      await Promise.all(Array.from({ length: 2 * WARM_CONNECTIONS }, () => h.account(c.orgId, 'mx')));
      return proxy.open >= WARM_CONNECTIONS;
    });
    proxy.setFault({ kind: 'mute' });
    const admitted = outcome(admission.admit(req));
    await until('the reservation is committed', async () => (await openReservations(c.orgId)) === 1);
    proxy.resetAll();
    proxy.setFault({ kind: 'pass' });
    expect(await admitted).toBe('platform_failure');

    // Nothing held for an admission nobody was told about, no claim left in progress.
    expect(await openReservations(c.orgId)).toBe(0);
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: 0, reserved: 0 });
    const claims = await h.sql(
      'SELECT count(*)::int AS n FROM admission.idempotency_records WHERE key_id = $1',
      [c.keyId],
    );
    expect(claims.rows[0].n).toBe(0);

    // The client's retry of the same key is a fresh admission, reserved once.
    const retry = await admission.admit(req);
    expect(retry.replay).toBe(false);
    expect(await h.account(c.orgId, 'mx')).toMatchObject({ used: 0, reserved: 1_639 });
    await admission.abort({ admissionId: retry.admissionId });
  });
});
