import {
  Code,
  ConnectError,
  type ConnectRouter,
  createClient,
  createRouterTransport,
} from '@connectrpc/connect';
import { admissionv1, dashboardv1, healthv1, jobsv1, platformv1, quotav1, registryv1 } from '@dnc/proto';
import { pino } from 'pino';
import { Counter, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  AUTHORIZATION,
  AuthorizationTable,
  authorizeInterceptor,
  EVERY_IDENTITY,
  methodName,
} from '../src/security/authorization.js';
import { PLATFORM_IDENTITIES } from '../src/security/identity.js';
import { CALLER } from '../src/security/transport.js';

const SERVICES = [
  admissionv1.AdmissionService,
  admissionv1.AdmissionAdminService,
  quotav1.QuotaService,
  quotav1.QuotaAdminService,
  jobsv1.JobsService,
  jobsv1.JobsAdminService,
  registryv1.RegistryAdapterService,
  registryv1.RegistryAdminService,
  platformv1.AuditService,
  platformv1.ServiceInfoService,
  healthv1.Health,
  admissionv1.OrganizationService,
  quotav1.OrganizationQuotaService,
  jobsv1.OrganizationJobsService,
  dashboardv1.DashboardAdminService,
];
/** What the customer dashboard calls: the organization-scoped methods (issue 16). */
const ORGANIZATION_SERVICES = [
  admissionv1.OrganizationService,
  quotav1.OrganizationQuotaService,
  jobsv1.OrganizationJobsService,
];
const ORGANIZATION_METHODS = ORGANIZATION_SERVICES.flatMap((s) => s.methods.map((m) => methodName(s, m)));
const ALL_METHODS = SERVICES.flatMap((s) => s.methods.map((m) => methodName(s, m)));
const ADMIN_SERVICES = [
  admissionv1.AdmissionAdminService,
  quotav1.QuotaAdminService,
  jobsv1.JobsAdminService,
  registryv1.RegistryAdminService,
  platformv1.AuditService,
  dashboardv1.DashboardAdminService,
];
const ADMIN_METHODS = ADMIN_SERVICES.flatMap((s) => s.methods.map((m) => methodName(s, m)));
const IDENTITIES = [...PLATFORM_IDENTITIES, 'registry-adapter-co', 'registry-adapter-mx'] as const;

describe('the authorization table (default deny)', () => {
  const table = new AuthorizationTable();

  it('names only methods that exist', () => {
    for (const methods of Object.values(AUTHORIZATION))
      for (const m of methods) expect(ALL_METHODS).toContain(m);
  });

  it('allows exactly its rows plus health and ServiceInfo, and refuses every other pair', () => {
    for (const identity of IDENTITIES) {
      const row = new Set([...(AUTHORIZATION[identity] ?? []), ...EVERY_IDENTITY]);
      for (const method of ALL_METHODS)
        expect(table.allows(identity, method), `${identity} ${method}`).toBe(row.has(method));
    }
  });

  it('lets only the dashboard call the organization-scoped methods, and the dashboard nothing else', () => {
    for (const identity of IDENTITIES)
      for (const method of ORGANIZATION_METHODS)
        expect(table.allows(identity, method), `${identity} ${method}`).toBe(identity === 'dashboard');
    const mine = new Set([...ORGANIZATION_METHODS, ...EVERY_IDENTITY]);
    for (const method of ALL_METHODS)
      expect(table.allows('dashboard', method), method).toBe(mine.has(method));
    expect(table.allows('dashboard', 'dnc.admission.v1.AdmissionAdminService/CreateApiKey')).toBe(false);
    expect(table.allows('dashboard', 'dnc.jobs.v1.JobsService/GetJobResult')).toBe(false);
  });

  it("lets the adapter chart's helm test (conformance) read an adapter and nothing else", () => {
    const mine = new Set([
      'dnc.registry.v1.RegistryAdapterService/Check',
      'dnc.registry.v1.RegistryAdapterService/Describe',
      ...EVERY_IDENTITY,
    ]);
    for (const method of ALL_METHODS)
      expect(table.allows('conformance', method), method).toBe(mine.has(method));
  });

  it('refuses a caller without an identity everything, health included', () => {
    for (const method of ALL_METHODS) expect(table.allows(undefined, method)).toBe(false);
  });

  it('lets only the operator reach administration, audit logs, registry load and drills', () => {
    for (const identity of IDENTITIES) {
      for (const method of ADMIN_METHODS) {
        // Admission sets the quota of a purchase the operator created (delegated, audited on both sides).
        const delegated = identity === 'admission' && method === 'dnc.quota.v1.QuotaAdminService/SetLimit';
        expect(table.allows(identity, method), `${identity} ${method}`).toBe(
          identity === 'operator' || delegated,
        );
      }
    }
    expect(table.allows('gateway', 'dnc.registry.v1.RegistryAdminService/Load')).toBe(false);
    expect(table.allows('gateway', 'dnc.admission.v1.AdmissionAdminService/CreateApiKey')).toBe(false);
    expect(table.allows('gateway', 'dnc.quota.v1.QuotaAdminService/SetLimit')).toBe(false);
  });

  it('keeps the operator off the data plane (no scrubs, no quota moves, no job reads)', () => {
    for (const s of [admissionv1.AdmissionService, quotav1.QuotaService, jobsv1.JobsService])
      for (const m of s.methods) expect(table.allows('operator', methodName(s, m))).toBe(false);
    expect(table.allows('operator', 'dnc.registry.v1.RegistryAdapterService/Check')).toBe(false);
  });

  it('gives an unknown adapter country nothing but health, and an unknown name nothing at all', () => {
    expect(table.allows('registry-adapter-zz', 'grpc.health.v1.Health/Check')).toBe(true);
    expect(table.allows('registry-adapter-zz', 'dnc.quota.v1.QuotaService/Commit')).toBe(false);
    expect(table.allows('admin' as never, 'grpc.health.v1.Health/Check')).toBe(false);
  });
});

describe('the authorization interceptor', () => {
  function setup(caller: string | undefined) {
    const registry = new Registry();
    const denied = new Counter({
      name: 'denied',
      help: 'x',
      labelNames: ['caller', 'method'],
      registers: [registry],
    });
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (l: string) => lines.push(l) });
    let handled = 0;
    const routes = (router: ConnectRouter) =>
      router.service(quotav1.QuotaAdminService, {
        setLimit: () => {
          handled++;
          return {};
        },
      });
    const transport = createRouterTransport(routes, {
      router: {
        interceptors: [
          (next) => (req) => {
            req.contextValues.set(CALLER, caller as never);
            return next(req);
          },
          authorizeInterceptor({ table: new AuthorizationTable(), logger, denied }),
        ],
      },
    });
    return {
      client: createClient(quotav1.QuotaAdminService, transport),
      denied,
      lines,
      handled: () => handled,
    };
  }

  it('refuses with PERMISSION_DENIED before the handler runs, counts and logs caller and method only', async () => {
    const t = setup('gateway');
    const error = await t.client.setLimit({ orgId: 'org-1', country: 'co', limit: 5n }).catch((e) => e);
    expect(ConnectError.from(error).code).toBe(Code.PermissionDenied);
    expect(t.handled()).toBe(0);
    const metric = await t.denied.get();
    expect(metric.values).toEqual([
      { value: 1, labels: { caller: 'gateway', method: 'dnc.quota.v1.QuotaAdminService/SetLimit' } },
    ]);
    expect(t.lines).toHaveLength(1);
    const line = JSON.parse(t.lines[0]!);
    expect(line).toMatchObject({ caller: 'gateway', method: 'dnc.quota.v1.QuotaAdminService/SetLimit' });
    expect(t.lines[0]).not.toContain('org-1');
  });

  it('lets an allowed caller through', async () => {
    const t = setup('operator');
    await t.client.setLimit({ orgId: 'org-1', country: 'co', limit: 5n });
    expect(t.handled()).toBe(1);
  });
});
