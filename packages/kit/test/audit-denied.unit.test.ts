import { type ConnectRouter, createClient, createRouterTransport } from '@connectrpc/connect';
import { registryv1 } from '@dnc/proto';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type AuditRecord, type AuditSink, auditDenied, auditInterceptor } from '../src/security/audit.js';

// The audit of refused calls on an admin listener stays bounded per caller (one row each up to the budget
// a minute), and what it did not write is written as one count with the caller's next refusal.
function memorySink() {
  const rows: AuditRecord[] = [];
  const sink: AuditSink = {
    append: async (r) => {
      rows.push(r);
    },
    list: async () => [],
  };
  return { rows, sink };
}

const refusal = (caller: string) => ({
  caller,
  subject: '',
  method: 'x.Admin/Do',
  targets: { org_id: 'o1' },
});

afterEach(() => {
  vi.useRealTimers();
});

describe('auditDenied', () => {
  it('writes up to the budget a minute per caller, then one row with the count after the minute', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: 1_000_000 });
    const { rows, sink } = memorySink();
    const denied = auditDenied(sink, pino({ level: 'silent' }), 5);
    for (let i = 0; i < 12; i++) denied(refusal('gateway'));
    for (let i = 0; i < 3; i++) denied(refusal('job-worker'));
    await Promise.resolve();
    expect(rows.filter((r) => r.caller === 'gateway')).toHaveLength(5);
    expect(rows.filter((r) => r.caller === 'job-worker')).toHaveLength(3);
    vi.setSystemTime(1_000_000 + 60_000);
    denied(refusal('gateway'));
    await Promise.resolve();
    const gateway = rows.filter((r) => r.caller === 'gateway');
    expect(gateway).toHaveLength(7);
    expect(gateway[5]).toMatchObject({
      outcome: 'permission_denied',
      targets: { refusals_not_written: '7' },
    });
    expect(gateway[6]).toMatchObject({ outcome: 'permission_denied', targets: { org_id: 'o1' } });
  });
});

// Found by a review of internal trust (2026-12-05): the targets a call names were merged over the
// service's own (`{ ...fixedTargets, ...input }`), so a caller's `country` replaced the adapter's in the
// append-only log (the adapter's admin listener: services/registry-adapter/test/admin-listener.unit.test.ts).
describe('auditInterceptor', () => {
  function audited(routes: (router: ConnectRouter) => void) {
    const { rows, sink } = memorySink();
    const transport = createRouterTransport(routes, {
      router: { interceptors: [auditInterceptor(sink, pino({ level: 'silent' }), { country: 'co' })] },
    });
    return { rows, client: createClient(registryv1.RegistryAdapterService, transport) };
  }

  it("the service's own ids are written over any the call names", async () => {
    const { rows, client } = audited((router) =>
      router.service(registryv1.RegistryAdapterService, { check: async () => ({}) }),
    );
    await client.check({ country: 'zz-forged' });
    expect(rows.map((r) => r.outcome)).toEqual(['started', 'ok']);
    for (const row of rows) expect(row.targets).toEqual({ country: 'co' });
  });
});
