import { fileURLToPath } from 'node:url';
import { createClient, type Interceptor } from '@connectrpc/connect';
import { COUNTRY_CODES, LIVE_COUNTRIES } from '@dnc/api-contract/limits';
import {
  AdapterDirectory,
  adapterEntryVerifier,
  auditInterceptor,
  connectNats,
  createPool,
  createRedis,
  ensureDatabase,
  Gauge,
  type Logger,
  methodName,
  migrateSchema,
  natsCredentials,
  natsNames,
  OrgAssertionIssuer,
  OrgAssertionVerifier,
  openBucket,
  orgAssertionRefusals,
  PG_POOL_DEFAULT,
  PostgresAuditLog,
  probePostgres,
  provisionJetStream,
  rpcTransport,
  type Service,
  serviceClient,
  startService,
} from '@dnc/kit';
import { admissionv1, healthv1, jobsv1, quotav1 } from '@dnc/proto';
import type { AdminDeps } from './admin.js';
import type { AdmitDeps } from './admit.js';
import { Completion } from './completion.js';
import type { AdmissionConfig } from './config.js';
import { CountryStatusPublisher } from './country-status.js';
import type { Timeouts } from './domain/idempotency.js';
import { type KeyFormGuard, openKeyForm } from './key-form.js';
import { KeyUsage } from './key-usage.js';
import { RequestLimiter } from './limiter.js';
import { OpenAdmissions } from './open-admissions.js';
import { organizationService } from './organization.js';
import { Refusals } from './public-errors.js';
import { IdempotencyPurge } from './purge.js';
import { ClaimReconciler } from './reconciler.js';
import { Reservations } from './reservations.js';
import { admissionRoutes } from './routes.js';
import { type AdmissionStores, admissionStores } from './store/index.js';

const MIGRATIONS = fileURLToPath(new URL('../migrations', import.meta.url));

export interface RunningAdmission {
  service: Service;
  port: number;
  /** The admin listener: AdmissionAdminService and the audit log (operator). */
  adminPort: number;
  stores: AdmissionStores;
  limiter: RequestLimiter;
  directory: AdapterDirectory;
  purge: IdempotencyPurge;
  reconciler: ClaimReconciler;
  /** Publishes each country's maintenance window to KV dnc_country_status (and republishes it). */
  countryStatus: CountryStatusPublisher;
  /** The form idempotency claims are written in (key-form.ts). */
  keyForm: KeyFormGuard;
}

/** Everything of the admission process except signal handling: tests start it in-process on port 0. */
export function startAdmission(config: AdmissionConfig): Promise<RunningAdmission> {
  return startService('admission', config, (service) => wire(service, config));
}

async function wire(service: Service, config: AdmissionConfig): Promise<RunningAdmission> {
  const { logger, metrics } = service;
  const pool = await openPostgres(service, config);
  const stores = admissionStores(pool);
  const keyForm = await openKeyForm(service, config, pool, stores.claims);
  const limiter = openLimiter(service, config);
  const { directory, countryStatus: bucket } = await openDiscovery(service, config);
  const countryStatus = new CountryStatusPublisher(
    { kv: bucket, read: (c) => stores.maintenance.maintenanceUntil(c), countries: COUNTRY_CODES, logger },
    config.DNC_COUNTRY_STATUS_REPUBLISH_MS,
  );
  const quota = quotaClients(service, config);
  await service.health.start();
  await service.startMetrics();

  const refusals = new Refusals(metrics, logger);
  const reservations = new Reservations(quota.quota, refusals);
  const timeouts = {
    syncClaimMs: config.DNC_SYNC_CLAIM_TIMEOUT_SECONDS * 1000,
    jobClaimMs: config.DNC_JOB_CLAIM_TIMEOUT_SECONDS * 1000,
  };
  const keyUsage = new KeyUsage(pool, logger, config.DNC_KEY_USAGE_FLUSH_MS);
  // FenceJob: before any v2 admission is undone (undo.ts), and the resume of a v2 claim whose reservation is gone.
  const jobs = serviceClient(jobsv1.JobsService, config.DNC_JOBS_ADDR, 3_000, {
    security: service.security,
    peer: 'job-scheduler',
  });
  const routes = routesOf(service, config, {
    stores,
    limiter,
    directory,
    countryStatus,
    quotaAdmin: quota.quotaAdmin,
    refusals,
    reservations,
    timeouts,
    keyUsage,
    jobs,
  });
  // The background loops are registered before the listeners, so they close after the drain (closers
  // run in reverse): the key uses of the calls that finish during the drain are written by the last
  // flush, and a reconcile or purge pass in progress does not hold back the GOAWAY.
  keyUsage.start();
  service.onClose('key usage', () => keyUsage.stop());
  countryStatus.start();
  service.onClose('country status republisher', () => countryStatus.stop());
  const purge = new IdempotencyPurge(
    stores.claims,
    logger,
    {
      syncSeconds: config.DNC_IDEMPOTENCY_RETENTION_SECONDS,
      jobSeconds: config.DNC_JOB_IDEMPOTENCY_RETENTION_SECONDS,
    },
    config.DNC_IDEMPOTENCY_PURGE_INTERVAL_MS,
  );
  purge.start();
  service.onClose('idempotency purge', () => purge.stop());
  const reconciler = startReconciler(service, config, {
    claims: stores.claims,
    reservations,
    timeouts,
    jobs,
  });
  const audit = new PostgresAuditLog(pool, 'admission', 'admission');
  const { port } = await service.startGrpcServer({
    port: config.DNC_GRPC_PORT,
    serviceNames: ['dnc.admission.v1.AdmissionService', 'dnc.admission.v1.OrganizationService'],
    routes: (router) => {
      routes.data(router);
      router.service(
        admissionv1.OrganizationService,
        organizationService({
          accounts: stores.accounts,
          maintenance: stores.maintenance,
          organizations: stores.organizations,
          logger,
        }),
      );
    },
    // A dependency failing is a platform failure for the callers of AdmissionService.
    interceptors: [refusals.interceptor(admissionv1.AdmissionService.typeName), keyAudit(audit, logger)],
  });
  const { port: adminPort } = await service.startAdminServer({
    port: config.DNC_ADMIN_PORT,
    serviceNames: ['dnc.admission.v1.AdmissionAdminService'],
    routes: routes.admin,
    audit,
  });
  logger.info({ port, adminPort }, 'admission listening');
  return { service, port, adminPort, stores, limiter, directory, purge, reconciler, countryStatus, keyForm };
}

/** AdmissionService (authentication, admission, completion) and AdmissionAdminService over their parts. */
function routesOf(
  service: Service,
  config: AdmissionConfig,
  parts: {
    stores: AdmissionStores;
    limiter: RequestLimiter;
    directory: AdapterDirectory;
    countryStatus: CountryStatusPublisher;
    quotaAdmin: AdminDeps['quotaAdmin'];
    refusals: Refusals;
    reservations: Reservations;
    timeouts: Timeouts;
    keyUsage: KeyUsage;
    jobs: AdmitDeps['jobs'];
  },
) {
  const { stores, limiter, directory, countryStatus, refusals, reservations, timeouts, keyUsage } = parts;
  const { logger } = service;
  const open = new OpenAdmissions(config.DNC_SYNC_CLAIM_TIMEOUT_SECONDS * 1000);
  return admissionRoutes({
    service: {
      accounts: stores.accounts,
      authentication: { limiter, refusals, defaultRateLimit: config.DNC_DEFAULT_RATE_LIMIT, keyUsage },
      admission: {
        gate: stores.gate,
        claims: stores.claims,
        jobs: parts.jobs,
        directory,
        reservations,
        open,
        refusals,
        logger,
        timeouts,
        idempotencyKeySecret: config.DNC_IDEMPOTENCY_KEY_SECRET,
      },
      completion: new Completion({ claims: stores.claims, reservations, open, jobs: parts.jobs, logger }),
      refusals,
      assertions: new OrgAssertionIssuer(service.security),
      verifier: (() => {
        const v = new OrgAssertionVerifier(service.security, 'admission');
        return { check: v.check.bind(v), refused: orgAssertionRefusals(service.metrics) };
      })(),
    },
    admin: {
      accounts: stores.accounts,
      organizations: stores.organizations,
      purchases: stores.purchases,
      maintenance: stores.maintenance,
      directory,
      quotaAdmin: parts.quotaAdmin,
      logger,
      defaultMonthlyQuota: config.DNC_DEFAULT_MONTHLY_QUOTA,
      publishCountryStatus: (country) => countryStatus.publish(country),
    },
  });
}

/** The claim reconciler: resolves claims left open past their timeout (FenceJob on the job scheduler). */
function startReconciler(
  service: Service,
  config: AdmissionConfig,
  parts: Omit<ConstructorParameters<typeof ClaimReconciler>[0], 'logger'>,
): ClaimReconciler {
  const reconciler = new ClaimReconciler(
    { ...parts, logger: service.logger },
    config.DNC_CLAIM_RECONCILE_INTERVAL_MS,
  );
  reconciler.start();
  service.onClose('claim reconciler', () => reconciler.stop());
  return reconciler;
}

async function openPostgres(service: Service, config: AdmissionConfig) {
  await ensureDatabase(config.DATABASE_URL);
  await migrateSchema(config.DATABASE_URL, 'admission', MIGRATIONS);
  const pool = createPool(config.DATABASE_URL, config.DNC_PG_POOL_MAX ?? PG_POOL_DEFAULT.admission, {
    idleInTransactionTimeoutMs: config.DNC_PG_IDLE_IN_TRANSACTION_MS,
  });
  service.onClose('postgres', () => pool.end());
  service.health.require('postgres', () => probePostgres(pool));
  return pool;
}

/** The technical rate limit and abuse guard (Redis; degrades to a per-process limit without it). */
function openLimiter(service: Service, config: AdmissionConfig): RequestLimiter {
  const redis = createRedis(config.REDIS_URL);
  service.onClose('redis', () => {
    redis.disconnect();
  });
  return new RequestLimiter(
    redis,
    {
      prefix: config.DNC_REDIS_PREFIX,
      windowSeconds: config.DNC_RATE_WINDOW_SECONDS,
      degradedDivisor: config.DNC_RATE_DEGRADED_DIVISOR,
      authFailures: config.DNC_ABUSE_AUTH_FAILURES,
      authWindowSeconds: config.DNC_ABUSE_AUTH_WINDOW_SECONDS,
      orgFactor: config.DNC_ABUSE_ORG_FACTOR,
      blockSeconds: config.DNC_ABUSE_BLOCK_SECONDS,
    },
    service.logger,
    service.metrics,
  );
}

/** Discovery of the country adapters (NATS KV dnc_adapters), kept current by a watch. */
async function openDiscovery(service: Service, config: AdmissionConfig) {
  const nc = await connectNats(config.NATS_URL, 'admission', natsCredentials(config));
  service.onClose('nats', () => nc.drain());
  await provisionJetStream(nc, config.DNC_NATS_PREFIX, config.DNC_JETSTREAM_REPLICAS, config);
  const names = natsNames(config.DNC_NATS_PREFIX);
  // An entry is used only if the country's adapter signed it (its certificate key, the platform CA).
  const directory = new AdapterDirectory(
    await openBucket(nc, names.adaptersBucket),
    service.logger,
    adapterEntryVerifier(service.security, service.logger),
  );
  directory.followConnection(nc);
  await directory.start();
  service.onClose('adapter directory', () => directory.stop());
  const countryStatus = await openBucket(nc, names.countryStatusBucket);
  new Gauge({
    name: 'dnc_country_adapter_serving',
    help: '1 while at least one adapter of the country is discovered and serving.',
    labelNames: ['country'],
    registers: [service.metrics],
    collect() {
      for (const c of LIVE_COUNTRIES)
        this.set({ country: c }, directory.instances(c).some((e) => e.status === 'serving') ? 1 : 0);
    },
  });
  return { directory, countryStatus };
}

/** Clients of the quota service; readiness requires it SERVING. */
function quotaClients(service: Service, config: AdmissionConfig) {
  const tls = { security: service.security, peer: 'quota' as const };
  const quotaHealth = createClient(healthv1.Health, rpcTransport(config.DNC_QUOTA_ADDR, [], tls));
  service.health.require('quota', async () => {
    const r = await quotaHealth.check({ service: '' }, { timeoutMs: 800 });
    return r.status === healthv1.HealthCheckResponse_ServingStatus.SERVING;
  });
  return {
    quota: serviceClient(quotav1.QuotaService, config.DNC_QUOTA_ADDR, 3_000, tls),
    // SetLimit on behalf of an operator's `purchase create`: quota's admin listener, audited there too.
    quotaAdmin: serviceClient(
      quotav1.QuotaAdminService,
      config.DNC_QUOTA_ADMIN_ADDR ?? config.DNC_QUOTA_ADDR,
      5_000,
      tls,
    ),
  };
}

/**
 * API keys created and revoked through OrganizationService (the dashboard's identity) are written to
 * admission's append-only audit log as the admin calls are: before they run (refused when it cannot be
 * written) and when they end, with the caller, the organization and the key, never the secret. The
 * dashboard's own audit log is the organization's; this one is the platform's, beyond the dashboard's
 * reach: a compromised dashboard may name any organization (docs/security.md), and what it did is here.
 */
function keyAudit(audit: PostgresAuditLog, logger: Logger): Interceptor {
  const methods = new Set(
    [admissionv1.OrganizationService.method.createKey, admissionv1.OrganizationService.method.revokeKey].map(
      (m) => methodName(admissionv1.OrganizationService, m),
    ),
  );
  const audited = auditInterceptor(audit, logger);
  return (next) => {
    const withAudit = audited(next);
    return (req) => (methods.has(methodName(req.service, req.method)) ? withAudit(req) : next(req));
  };
}
