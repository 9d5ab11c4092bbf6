import type { DescMethod, DescService } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { LocalCa } from '@dnc/devstack';
import { AuthorizationTable, type Identity, methodName, type Security } from '@dnc/kit';
import { admissionv1, dashboardv1, healthv1, jobsv1, platformv1, quotav1, registryv1 } from '@dnc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../support/stack.js';

// Issue 13, tests: every (identity, method) pair outside THE table is refused with PERMISSION_DENIED by
// the real services, on their data and admin listeners (separate processes, real mutual TLS); a connection without a client certificate,
// with an expired one or one of another CA never gets to send a request.

const CALLERS: Identity[] = [
  'gateway',
  'admission',
  'quota',
  'job-scheduler',
  'job-worker',
  'operator',
  'dashboard',
  'conformance',
  'registry-adapter-co',
  'registry-adapter-mx',
];

interface Served {
  /** The server's identity and where it listens. */
  peer: Identity;
  address: (s: TestStack) => string;
  services: DescService[];
}

const COMMON = [healthv1.Health, platformv1.ServiceInfoService];
/** Each admin listener also serves the audit log. */
const ADMIN = [platformv1.AuditService, ...COMMON];
const SERVED: Served[] = [
  {
    peer: 'admission',
    address: (s) => s.addresses.admission,
    services: [admissionv1.AdmissionService, admissionv1.OrganizationService, ...COMMON],
  },
  {
    peer: 'admission',
    address: (s) => s.addresses.admissionAdmin,
    services: [admissionv1.AdmissionAdminService, ...ADMIN],
  },
  {
    peer: 'quota',
    address: (s) => s.addresses.quota,
    services: [quotav1.QuotaService, quotav1.OrganizationQuotaService, ...COMMON],
  },
  {
    peer: 'quota',
    address: (s) => s.addresses.quotaAdmin,
    services: [quotav1.QuotaAdminService, ...ADMIN],
  },
  {
    peer: 'job-scheduler',
    address: (s) => s.addresses.jobs,
    services: [jobsv1.JobsService, jobsv1.OrganizationJobsService, ...COMMON],
  },
  {
    peer: 'job-scheduler',
    address: (s) => s.addresses.jobsAdmin,
    services: [jobsv1.JobsAdminService, ...ADMIN],
  },
  {
    peer: 'dashboard',
    address: (s) => s.addresses.dashboardAdmin,
    services: [dashboardv1.DashboardAdminService, ...ADMIN],
  },
  {
    peer: 'registry-adapter-co',
    address: (s) => s.addresses.adapters['co']!,
    services: [registryv1.RegistryAdapterService, ...COMMON],
  },
  {
    peer: 'registry-adapter-co',
    address: (s) => s.addresses.adapterAdmins['co']!,
    services: [registryv1.RegistryAdminService, ...ADMIN],
  },
];

/** Call any method with an empty request (streams: an empty stream, the first answer). */
async function invoke(client: Record<string, unknown>, method: DescMethod): Promise<unknown> {
  const fn = client[method.localName] as (...args: unknown[]) => unknown;
  const options = { timeoutMs: 5_000 };
  switch (method.methodKind) {
    case 'unary':
      return fn({}, options);
    case 'client_streaming':
      return fn((async function* () {})(), options);
    case 'server_streaming':
      for await (const m of fn({}, options) as AsyncIterable<unknown>) return m;
      return undefined;
    default:
      for await (const m of fn((async function* () {})(), options) as AsyncIterable<unknown>) return m;
      return undefined;
  }
}

/**
 * The answer's code; 'assertion' for a call that passed the table and was then refused for want of
 * admission's organization assertion (JobsService's organization-scoped methods: the matrix sends none).
 */
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok' as const,
    (e: unknown) => {
      const ce = ConnectError.from(e);
      if (ce.code === Code.PermissionDenied && ce.rawMessage.includes('organization assertion'))
        return 'assertion' as const;
      return ce.code;
    },
  );

describe('zero trust: the authorization matrix and the handshake (issue 13)', () => {
  let stack: TestStack;
  const callers = new Map<Identity, Security>();

  beforeAll(async () => {
    stack = await startTestStack({ label: 'ztmatrix', countries: ['co'], skip: ['gateway'] });
    for (const c of CALLERS) callers.set(c, await stack.security(c));
  });
  afterAll(async () => {
    await stack?.teardown();
  });

  it('every (identity, method) pair not in the table is PERMISSION_DENIED; every pair in it gets past authorization', async () => {
    const table = new AuthorizationTable();
    const wrong: string[] = [];
    let refused = 0;
    let allowed = 0;
    for (const served of SERVED) {
      for (const caller of CALLERS) {
        const transport = stack.transport(callers.get(caller)!, served.peer, served.address(stack));
        for (const service of served.services) {
          const client = createClient(service, transport) as unknown as Record<string, unknown>;
          const answers = await Promise.all(
            service.methods.map(async (m) => ({
              method: methodName(service, m),
              code: await codeOf(invoke(client, m)),
            })),
          );
          for (const { method, code } of answers) {
            const mayCall = table.allows(caller, method);
            if (mayCall) allowed++;
            else refused++;
            if (!mayCall && code !== Code.PermissionDenied) wrong.push(`${caller} ${method}: ${code}`);
            if (mayCall && code === Code.PermissionDenied) wrong.push(`${caller} ${method}: refused`);
          }
        }
      }
    }
    expect(wrong).toEqual([]);
    expect(refused).toBeGreaterThan(300);
    expect(allowed).toBeGreaterThan(50);
    // Each refusal is counted by the server that refused it, by caller and method.
    const metrics = await (
      await fetch(`http://127.0.0.1:${stack.addresses.metrics['quota']}/metrics`)
    ).text();
    expect(metrics).toMatch(
      /dnc_rpc_denied_total\{[^}]*caller="gateway"[^}]*method="dnc\.quota\.v1\.QuotaAdminService\/SetLimit"[^}]*\} [1-9]/,
    );
    // ... and logged with caller and method only.
    expect(stack.logsOf('quota')).toMatch(
      /"caller":"gateway".*"method":"dnc\.quota\.v1\.QuotaAdminService\/SetLimit".*rpc refused/,
    );
  });

  it('no client certificate, an expired one, one of another CA: refused at the handshake on every listener', async () => {
    const expired = await stack.pki.ca.issue('operator', {
      notBefore: new Date(Date.now() - 10 * 86_400_000),
      notAfter: new Date(Date.now() - 86_400_000),
    });
    const foreign = await (await LocalCa.create()).issue('operator');
    const presented: { label: string; cert?: string; key?: string }[] = [
      { label: 'none' },
      { label: 'expired', cert: expired.certPem, key: expired.keyPem },
      { label: 'other CA', cert: foreign.certPem, key: foreign.keyPem },
    ];
    const outcomes: string[] = [];
    for (const served of SERVED) {
      for (const p of presented) {
        const transport = createConnectTransport({
          baseUrl: served.address(stack).replace('http://', 'https://'),
          httpVersion: '2',
          nodeOptions: {
            ca: stack.pki.ca.pem,
            ...(p.cert ? { cert: p.cert, key: p.key } : {}),
            checkServerIdentity: () => undefined,
          },
        });
        const code = await codeOf(
          createClient(platformv1.ServiceInfoService, transport).getServiceInfo({}, { timeoutMs: 5_000 }),
        );
        outcomes.push(`${served.peer} ${p.label}: ${code === 'ok' ? 'served' : 'refused'}`);
      }
    }
    expect(outcomes.filter((o) => o.endsWith('served'))).toEqual([]);
    // A plaintext h2c request to a mutual-TLS listener is not served either.
    const plain = createConnectTransport({ baseUrl: stack.addresses.quota, httpVersion: '2' });
    expect(
      await codeOf(
        createClient(platformv1.ServiceInfoService, plain).getServiceInfo({}, { timeoutMs: 3_000 }),
      ),
    ).not.toBe('ok');
  });

  it('the plaintext health listener answers health and nothing else', async () => {
    const port = stack.processes.get('quota')!.env['DNC_HEALTH_PORT'];
    const transport = createConnectTransport({ baseUrl: `http://127.0.0.1:${port}`, httpVersion: '2' });
    const health = await createClient(healthv1.Health, transport).check({ service: '' });
    expect(health.status).toBe(healthv1.HealthCheckResponse_ServingStatus.SERVING);
    for (const call of [
      createClient(platformv1.ServiceInfoService, transport).getServiceInfo({}),
      createClient(quotav1.QuotaAdminService, transport).setLimit({ orgId: 'x', country: 'co', limit: 1n }),
      createClient(quotav1.QuotaService, transport).release({ reservationId: 'x' }),
    ])
      expect(await codeOf(call)).toBe(Code.Unimplemented);
  });
});
