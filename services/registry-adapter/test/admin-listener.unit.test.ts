import { Code, ConnectError, createClient, createRouterTransport } from '@connectrpc/connect';
import { type AuditRecord, auditInterceptor } from '@dnc/kit';
import { registryv1 } from '@dnc/proto';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { type AdapterDeps, adapterRoutes } from '../src/routes.js';

// Found by a review of internal trust (2026-12-05): the admin listener registered the whole
// RegistryAdapterService for its Describe, so connect answered every other method (Check) with its
// unimplemented stub, through the audit: each Check from a certificate allowed to call Check (the
// gateway, the workers) wrote two permanent rows to the append-only log, without bound.
describe("the adapter's admin listener", () => {
  it('serves Describe only: Check is not found there and writes nothing to the audit log', async () => {
    const rows: AuditRecord[] = [];
    const sink = { append: async (r: AuditRecord) => void rows.push(r), list: async () => [] };
    const deps = {
      country: 'co',
      version: 't',
      provider: { state: () => ({ status: 'serving', registrySize: 0 }) },
    } as unknown as AdapterDeps;
    const transport = createRouterTransport(adapterRoutes(deps).admin, {
      router: { interceptors: [auditInterceptor(sink, pino({ level: 'silent' }), { country: 'co' })] },
    });
    const client = createClient(registryv1.RegistryAdapterService, transport);
    for (let i = 0; i < 5; i++) {
      const code = await client.check({ country: 'co' }).then(
        () => 'ok',
        (e: unknown) => ConnectError.from(e).code,
      );
      expect(code).toBe(Code.Unimplemented);
    }
    expect(rows).toEqual([]);
    expect((await client.describe({})).country).toBe('co');
    expect(rows.map((r) => r.outcome)).toEqual(['started', 'ok']);
  });
});
