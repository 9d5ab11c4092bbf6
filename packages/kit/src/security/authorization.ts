import type { DescService } from '@bufbuild/protobuf';
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import { admissionv1, dashboardv1, healthv1, jobsv1, platformv1, quotav1, registryv1 } from '@dnc/proto';
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import { type Identity, isIdentity } from './identity.js';
import { CALLER, CALLER_SUBJECT } from './transport.js';

/** `dnc.admission.v1.AdmissionService/Admit`: how the table and the metrics name a method. */
export type MethodName = `${string}/${string}`;

export function methodName(service: { typeName: string }, method: { name: string }): MethodName {
  return `${service.typeName}/${method.name}`;
}

type GenService = DescService & { method: Record<string, { name: string }> };

/** Named methods of a service, checked against the generated code (a typo does not compile). */
function only<S extends GenService>(service: S, ...names: (keyof S['method'] & string)[]): MethodName[] {
  return names.map((n) => methodName(service, service.method[n]!));
}

/** Every method of a service. */
function all(service: DescService): MethodName[] {
  return service.methods.map((m) => methodName(service, m));
}

/**
 * Any authenticated workload may ask a peer whether it serves and what version it runs (readiness of
 * a dependency, `dnc-admin status`). Kubelet and Prometheus use the plain health and metrics
 * listeners instead, which answer nothing else.
 */
export const EVERY_IDENTITY: readonly MethodName[] = [
  ...all(healthv1.Health),
  ...all(platformv1.ServiceInfoService),
];

/**
 * THE authorization table: which identity may call which method. Anything not written here is
 * refused with PERMISSION_DENIED (default deny), whichever listener the method is served on.
 * A new method gets a row here in the same change that adds its first caller (docs/security.md,
 * "Adding a method").
 */
export const AUTHORIZATION: Readonly<Record<string, readonly MethodName[]>> = {
  // The public edge: the data-plane calls of its routes, nothing administrative.
  gateway: [
    ...only(
      admissionv1.AdmissionService,
      'authenticate',
      'admit',
      'admitMany',
      'complete',
      'completeMany',
      'abort',
      'confirmJob',
    ),
    ...only(jobsv1.JobsService, 'submitJob', 'getJob', 'getJobResult', 'cancelJob'),
    ...only(registryv1.RegistryAdapterService, 'check'),
  ],
  // Reserves and settles quota for the requests it admits. SetLimit is the one administrative call
  // it makes: on behalf of an operator's `purchase create`, which admission audits first.
  admission: [
    ...only(quotav1.QuotaService, 'reserve', 'reserveMany', 'commit', 'commitMany', 'release'),
    ...only(quotav1.QuotaAdminService, 'setLimit'),
    // The claim reconciler resolves a v2 admission whose SubmitJob outcome was lost (issue 14).
    ...only(jobsv1.JobsService, 'fenceJob'),
  ],
  // Calls no other service.
  quota: [],
  // Settles the quota of jobs that end (sweepers: expiry, cancellation).
  'job-scheduler': [...only(quotav1.QuotaService, 'commit', 'release')],
  // Runs jobs against the adapters and settles their quota.
  'job-worker': [
    ...only(quotav1.QuotaService, 'commit', 'release'),
    ...only(registryv1.RegistryAdapterService, 'check'),
  ],
  // The person at dnc-admin: every administrative service and the audit logs, and an adapter's
  // Describe for `registry status`. Never the data plane (no scrubs, no quota moves, no job reads).
  operator: [
    ...all(admissionv1.AdmissionAdminService),
    ...all(quotav1.QuotaAdminService),
    ...all(jobsv1.JobsAdminService),
    ...all(registryv1.RegistryAdminService),
    ...all(platformv1.AuditService),
    ...only(registryv1.RegistryAdapterService, 'describe'),
    // `dnc-admin user invite`: the first owner of an organization's dashboard.
    ...all(dashboardv1.DashboardAdminService),
  ],
  // The adapter chart's `helm test` Pod (the conformance of one release): an adapter's Check of an
  // unparseable input and its Describe, both reads, on the data plane. Nothing else, nothing of the
  // platform's services.
  conformance: [...only(registryv1.RegistryAdapterService, 'check', 'describe')],
  // The customer dashboard: the organization-scoped methods only, which take the organization of the
  // signed-in person's session (keys of that organization, its plan, quota, usage and jobs). Never the
  // data plane, never an administrative service.
  dashboard: [
    ...all(admissionv1.OrganizationService),
    ...all(quotav1.OrganizationQuotaService),
    ...all(jobsv1.OrganizationJobsService),
  ],
};

export class AuthorizationTable {
  private readonly allowed = new Map<string, Set<string>>();

  constructor(table: Readonly<Record<string, readonly MethodName[]>> = AUTHORIZATION) {
    for (const [identity, methods] of Object.entries(table))
      this.allowed.set(identity, new Set([...EVERY_IDENTITY, ...methods]));
  }

  /** Country adapters call no platform method; they get only what every identity gets. */
  allows(caller: Identity | undefined, method: string): boolean {
    if (!caller) return false;
    const row = this.allowed.get(caller);
    if (row) return row.has(method);
    return isIdentity(caller) && EVERY_IDENTITY.includes(method as MethodName);
  }

  /** Every (identity, method) pair the table allows: for tests and docs/security.md. */
  rows(): [string, string[]][] {
    return [...this.allowed].map(([identity, methods]) => [identity, [...methods].sort()]);
  }
}

export interface Refusal {
  caller: string;
  subject: string;
  method: MethodName;
}

/**
 * The server side of the table: a call its caller may not make ends with PERMISSION_DENIED before
 * any handler runs, is counted (`dnc_rpc_denied_total{caller,method}`) and logged with the caller
 * and the method, never the payload.
 */
export function authorizeInterceptor(opts: {
  table: AuthorizationTable;
  logger: Logger;
  denied: Counter<'caller' | 'method'>;
  onDenied?: (refusal: Refusal) => void;
}): Interceptor {
  return (next) => (req) => {
    const caller = req.contextValues.get(CALLER);
    const method = methodName(req.service, req.method);
    if (opts.table.allows(caller, method)) return next(req);
    const refusal = {
      caller: caller ?? 'unauthenticated',
      subject: req.contextValues.get(CALLER_SUBJECT),
      method,
    };
    opts.denied.inc({ caller: refusal.caller, method });
    opts.logger.warn({ caller: refusal.caller, method }, 'rpc refused: caller not authorized');
    opts.onDenied?.(refusal);
    throw new ConnectError(`${refusal.caller} may not call ${method}`, Code.PermissionDenied);
  };
}
