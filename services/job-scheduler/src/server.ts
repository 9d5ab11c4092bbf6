import { fileURLToPath } from 'node:url';
import type { Client } from '@connectrpc/connect';
import {
  type AdapterClient,
  AdapterDirectory,
  adapterEntryVerifier,
  adapterIdentity,
  connectNats,
  createPool,
  ensureDatabase,
  type Logger,
  methodName,
  migrateSchema,
  type NatsConnection,
  natsCredentials,
  natsNames,
  OrgAssertionVerifier,
  openBucket,
  orgAssertionInterceptor,
  orgAssertionRefusals,
  PG_POOL_DEFAULT,
  PostgresAuditLog,
  probePostgres,
  provisionJetStream,
  RegistryAdapterCheck,
  ResultStreams,
  type Service,
  serviceClient,
  startService,
} from '@dnc/kit';
import { jobsv1, quotav1 } from '@dnc/proto';
import type { JobsConfig } from './config.js';
import { KeyRing } from './crypto/envelope.js';
import { BLOB_FORMAT } from './crypto/segment-codec.js';
import { Dispatcher } from './dispatch.js';
import { type JobMetrics, jobMetrics } from './metrics.js';
import { organizationJobsService } from './organization.js';
import { jobsRoutes } from './routes.js';
import { QuotaSettlement } from './settlement.js';
import { SpentMessageWatch } from './spent-messages.js';
import { CleanupStore } from './store/cleanup.js';
import { JobStore } from './store/jobs.js';
import { SweepLease } from './store/sweep-lease.js';
import { Sweeper } from './sweeper.js';
import { DeclaredMaintenance } from './worker/declared-maintenance.js';
import { defaultMemoryBudget } from './worker/memory.js';
import { JobWorker } from './worker/worker.js';

/** JobsService methods that act for the organization the request names (its `orgId`). */
const ORG_SCOPED_METHODS = (['submitJob', 'getJob', 'getJobResult', 'cancelJob'] as const).map((m) =>
  methodName(jobsv1.JobsService, jobsv1.JobsService.method[m]),
);

const MIGRATIONS = fileURLToPath(new URL('../migrations', import.meta.url));

export interface RunningJobScheduler {
  service: Service;
  port: number;
  /** The API role's admin listener: JobsAdminService and the audit log. */
  adminPort?: number;
}

/** What the API role and the worker role share: stores, keys, quota settlement, dispatch. */
interface Core {
  config: JobsConfig;
  service: Service;
  pool: ReturnType<typeof createPool>;
  nc: NatsConnection;
  keys: KeyRing;
  store: JobStore;
  cleanup: CleanupStore;
  settlement: QuotaSettlement;
  dispatcher: Dispatcher;
  metrics: JobMetrics;
  logger: Logger;
}

/**
 * The job scheduler, except signal handling. DNC_ROLE=api serves JobsService and JobsAdminService and
 * runs the sweepers; DNC_ROLE=worker consumes the work queue; DNC_ROLE=all does both (local use and
 * tests).
 */
export function startJobScheduler(config: JobsConfig): Promise<RunningJobScheduler> {
  const role = config.DNC_ROLE;
  const keys = KeyRing.parse(config.DNC_KEKS, config.DNC_KEK_ACTIVE_ID);
  return startService(role === 'worker' ? 'job-worker' : 'job-scheduler', config, async (service) => {
    const core = await openCore(service, config, keys);
    if (role === 'api' || role === 'all') startSweeper(core);
    if (role === 'worker' || role === 'all') await startWorker(core);
    await service.health.start();
    await service.startMetrics();
    const { store, cleanup, dispatcher, settlement, metrics, logger } = core;
    const deps = {
      store,
      cleanup,
      keys,
      dispatcher,
      settlement,
      metrics,
      logger,
      track: <T>(p: Promise<T>) => service.track(p),
      resultStreams: new ResultStreams(config.DNC_RESULT_STREAMS_MAX, config.DNC_RESULT_STREAMS_PER_ORG),
    };
    const routes = jobsRoutes(deps);
    const api = role !== 'worker';
    // The worker serves no API: its gRPC listener answers health and service info only.
    const { port } = await service.startGrpcServer({
      port: config.DNC_GRPC_PORT,
      serviceNames: api ? ['dnc.jobs.v1.JobsService', 'dnc.jobs.v1.OrganizationJobsService'] : [],
      // JobsService acts for the organization a request names only with admission's assertion of it
      // (docs/security.md, "Organization assertions"). The dashboard's OrganizationJobsService acts on
      // the dashboard's own authority (it signs people in), FenceJob names no organization.
      interceptors: api
        ? [
            orgAssertionInterceptor({
              verifier: new OrgAssertionVerifier(service.security, 'job-scheduler'),
              methods: ORG_SCOPED_METHODS,
              logger,
              refused: orgAssertionRefusals(service.metrics),
            }),
          ]
        : [],
      routes: api
        ? (router) => {
            routes.data(router);
            router.service(jobsv1.OrganizationJobsService, organizationJobsService(deps));
          }
        : () => {},
    });
    const adminPort = api
      ? (
          await service.startAdminServer({
            port: config.DNC_ADMIN_PORT,
            serviceNames: ['dnc.jobs.v1.JobsAdminService'],
            routes: routes.admin,
            audit: new PostgresAuditLog(core.pool, 'jobs', 'job-scheduler'),
          })
        ).port
      : undefined;
    logger.info({ port, adminPort, role }, 'job scheduler listening');
    return { service, port, ...(adminPort !== undefined ? { adminPort } : {}) };
  });
}

async function openCore(service: Service, config: JobsConfig, keys: KeyRing): Promise<Core> {
  await ensureDatabase(config.DATABASE_URL);
  await migrateSchema(config.DATABASE_URL, 'jobs', MIGRATIONS);
  const pool = createPool(
    config.DATABASE_URL,
    config.DNC_PG_POOL_MAX ?? PG_POOL_DEFAULT[config.DNC_ROLE === 'worker' ? 'job-worker' : 'job-scheduler'],
    { idleInTransactionTimeoutMs: config.DNC_PG_IDLE_IN_TRANSACTION_MS },
  );
  service.onClose('postgres', () => pool.end());
  service.health.require('postgres', () => probePostgres(pool));
  const nc = await connectNats(config.NATS_URL, service.options.name, natsCredentials(config));
  service.onClose('nats', () => nc.drain());
  service.health.require('nats', async () => !nc.isClosed() && nc.info !== undefined);
  await provisionJetStream(nc, config.DNC_NATS_PREFIX, config.DNC_JETSTREAM_REPLICAS, config);

  const metrics = jobMetrics(service.metrics);
  const logger = service.logger;
  const store = new JobStore(
    pool,
    keys,
    {
      hardCapSeconds: config.DNC_JOB_HARD_CAP_SECONDS,
      resultTtlSeconds: config.DNC_RESULT_TTL_SECONDS,
      metadataTtlSeconds: config.DNC_METADATA_TTL_SECONDS,
      resultStreamMaxMs: config.DNC_RESULT_STREAM_MAX_MS,
    },
    config.DNC_JOB_BLOB_FORMAT === 1 ? BLOB_FORMAT.raw : BLOB_FORMAT.framed,
  );
  const quota: Client<typeof quotav1.QuotaService> = serviceClient(
    quotav1.QuotaService,
    config.DNC_QUOTA_ADDR,
    5_000,
    { security: service.security, peer: 'quota' },
  );
  return {
    config,
    service,
    pool,
    nc,
    keys,
    store,
    cleanup: new CleanupStore(pool),
    settlement: new QuotaSettlement(quota, store, metrics, logger),
    dispatcher: new Dispatcher(nc, config.DNC_NATS_PREFIX, store, logger),
    metrics,
    logger,
  };
}

/** The API role's sweepers: re-dispatch, hard cap, settlement retries, retention. */
function startSweeper(core: Core): void {
  const { config, service } = core;
  const sweeper = new Sweeper({
    pool: core.pool,
    lease: new SweepLease(core.pool, config.DNC_SWEEP_LEASE_MS),
    store: core.store,
    cleanup: core.cleanup,
    keys: core.keys,
    dispatcher: core.dispatcher,
    settlement: core.settlement,
    metrics: core.metrics,
    logger: core.logger,
    intervalMs: config.DNC_SWEEP_INTERVAL_MS,
    redispatchAfterMs: config.DNC_REDISPATCH_AFTER_MS,
    fenceRetentionSeconds: config.DNC_IDEMPOTENCY_RETENTION_SECONDS,
  });
  sweeper.start();
  service.onClose('sweeper', () => sweeper.stop());
  const spent = new SpentMessageWatch(core.nc, config.DNC_NATS_PREFIX, core.store, core.logger);
  spent.start();
  service.onClose('spent work messages', () => spent.stop());
}

/** The worker role: consumes the work queue and runs jobs against the adapters found in discovery. */
async function startWorker(core: Core): Promise<void> {
  const { config, service, nc } = core;
  const names = natsNames(config.DNC_NATS_PREFIX);
  const kv = await openBucket(nc, names.adaptersBucket);
  const declared = new DeclaredMaintenance(await openBucket(nc, names.countryStatusBucket), core.logger);
  // An entry is used only if the country's adapter signed it (its certificate key, the platform CA).
  const directory = new AdapterDirectory(
    kv,
    core.logger,
    adapterEntryVerifier(service.security, core.logger),
  );
  directory.followConnection(nc);
  await directory.start();
  service.onClose('adapter directory', () => directory.stop());
  const adapterClients = new Map<string, AdapterClient>();
  const worker = new JobWorker(
    {
      nc,
      store: core.store,
      keys: core.keys,
      directory,
      // A connection to the address discovery gave is used only if the server there proves it is
      // the country's adapter (registry-adapter-<cc>): an impostor never receives a number.
      clients: (address, country) => {
        const key = `${country} ${address}`;
        let c = adapterClients.get(key);
        if (!c) {
          c = serviceClient(RegistryAdapterCheck, address, config.DNC_ADAPTER_CALL_TIMEOUT_MS, {
            security: service.security,
            peer: adapterIdentity(country),
          });
          adapterClients.set(key, c);
        }
        return c;
      },
      settlement: core.settlement,
      metrics: core.metrics,
      logger: core.logger,
      declaredMaintenance: (country) => declared.until(country),
    },
    {
      prefix: config.DNC_NATS_PREFIX,
      countries: config.DNC_COUNTRIES,
      jobConcurrency: config.DNC_WORKER_JOB_CONCURRENCY,
      unitConcurrency: config.DNC_WORKER_UNIT_CONCURRENCY,
      unitSize: config.DNC_WORKER_UNIT_SIZE,
      retries: config.DNC_ADAPTER_RETRIES,
      callTimeoutMs: config.DNC_ADAPTER_CALL_TIMEOUT_MS,
      leaseMs: config.DNC_JOB_LEASE_MS,
      ackWaitMs: config.DNC_JOBS_ACK_WAIT_MS,
      maxDeliver: config.DNC_JOBS_MAX_DELIVER,
      maxAttempts: config.DNC_JOB_MAX_ATTEMPTS,
      memoryBudgetBytes: config.DNC_WORKER_MEMORY_BUDGET_MIB
        ? config.DNC_WORKER_MEMORY_BUDGET_MIB * 1024 * 1024
        : defaultMemoryBudget(),
    },
  );
  await worker.start();
  service.onClose('worker', () => worker.stop());
}
