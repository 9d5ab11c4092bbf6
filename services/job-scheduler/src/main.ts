import { fileURLToPath } from 'node:url';
import type { Client } from '@connectrpc/connect';
import {
  AdapterDirectory,
  connectNats,
  createPool,
  ensureDatabase,
  loadConfig,
  migrateSchema,
  natsNames,
  openBucket,
  probePostgres,
  provisionJetStream,
  runMain,
  Service,
  serviceClient,
} from '@dnc/kit';
import { quotav1, registryv1 } from '@dnc/proto';
import { jobsConfig } from './config.js';
import { KeyRing } from './crypto/envelope.js';
import { Dispatcher } from './dispatch.js';
import { jobMetrics } from './metrics.js';
import { jobsRoutes } from './routes.js';
import { QuotaSettlement } from './settlement.js';
import { CleanupStore } from './store/cleanup.js';
import { JobStore } from './store/jobs.js';
import { Sweeper } from './sweeper.js';
import { JobWorker } from './worker/worker.js';

const MIGRATIONS = fileURLToPath(new URL('../migrations', import.meta.url));

/**
 * The job scheduler. DNC_ROLE=api serves JobsService and JobsAdminService and runs the sweepers;
 * DNC_ROLE=worker consumes the work queue; DNC_ROLE=all does both (local use and tests).
 */
export async function main(env: NodeJS.ProcessEnv = process.env): Promise<Service & { grpcPort: number }> {
  const config = loadConfig(jobsConfig, env);
  const role = config.DNC_ROLE;
  const keys = KeyRing.parse(config.DNC_KEKS, config.DNC_KEK_ACTIVE_ID);
  const service = new Service({
    name: role === 'worker' ? 'job-worker' : 'job-scheduler',
    version: process.env['npm_package_version'] ?? '0.1.0',
    logLevel: config.DNC_LOG_LEVEL,
    shutdownTimeoutMs: config.DNC_SHUTDOWN_TIMEOUT_MS,
    metricsPort: config.DNC_METRICS_PORT,
  });
  if (env === process.env) service.handleSignals();
  await ensureDatabase(config.DATABASE_URL);
  await migrateSchema(config.DATABASE_URL, 'jobs', MIGRATIONS);
  const pool = createPool(config.DATABASE_URL, role === 'worker' ? 6 : 10);
  service.onClose('postgres', () => pool.end());
  service.health.require('postgres', () => probePostgres(pool));
  const nc = await connectNats(config.NATS_URL, service.options.name);
  service.onClose('nats', () => nc.drain());
  service.health.require('nats', async () => !nc.isClosed() && nc.info !== undefined);
  await provisionJetStream(nc, config.DNC_NATS_PREFIX, config.DNC_JETSTREAM_REPLICAS);

  const metrics = jobMetrics(service.metrics);
  const policy = {
    hardCapSeconds: config.DNC_JOB_HARD_CAP_SECONDS,
    resultTtlSeconds: config.DNC_RESULT_TTL_SECONDS,
    metadataTtlSeconds: config.DNC_METADATA_TTL_SECONDS,
  };
  const store = new JobStore(pool, keys, policy);
  const cleanup = new CleanupStore(pool);
  const quota: Client<typeof quotav1.QuotaService> = serviceClient(
    quotav1.QuotaService,
    config.DNC_QUOTA_ADDR,
    5_000,
  );
  const settlement = new QuotaSettlement(quota, store, metrics, service.logger);
  const dispatcher = new Dispatcher(nc, config.DNC_NATS_PREFIX, store, service.logger);

  if (role === 'api' || role === 'all') {
    const sweeper = new Sweeper({
      pool,
      store,
      cleanup,
      dispatcher,
      settlement,
      metrics,
      logger: service.logger,
      intervalMs: config.DNC_SWEEP_INTERVAL_MS,
      redispatchAfterMs: config.DNC_REDISPATCH_AFTER_MS,
    });
    sweeper.start();
    service.onClose('sweeper', () => sweeper.stop());
  }

  if (role === 'worker' || role === 'all') {
    const kv = await openBucket(nc, natsNames(config.DNC_NATS_PREFIX).adaptersBucket);
    const directory = new AdapterDirectory(kv, service.logger);
    await directory.start();
    service.onClose('adapter directory', () => directory.stop());
    const adapterClients = new Map<string, Client<typeof registryv1.RegistryAdapterService>>();
    const worker = new JobWorker(
      {
        nc,
        store,
        keys,
        directory,
        clients: (address) => {
          let c = adapterClients.get(address);
          if (!c) {
            c = serviceClient(registryv1.RegistryAdapterService, address, config.DNC_ADAPTER_CALL_TIMEOUT_MS);
            adapterClients.set(address, c);
          }
          return c;
        },
        settlement,
        metrics,
        logger: service.logger,
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
      },
    );
    await worker.start();
    service.onClose('worker', () => worker.stop());
  }

  await service.health.start();
  await service.startMetrics();
  const deps = { store, cleanup, keys, dispatcher, settlement, metrics, logger: service.logger };
  const { port } = await service.startGrpcServer({
    port: config.DNC_GRPC_PORT,
    serviceNames: role === 'worker' ? [] : ['dnc.jobs.v1.JobsService', 'dnc.jobs.v1.JobsAdminService'],
    routes: role === 'worker' ? () => {} : jobsRoutes({ ...deps, track: (p) => service.track(p) }),
  });
  service.logger.info({ port, role }, 'job scheduler listening');
  return Object.assign(service, { grpcPort: port });
}

if (process.argv[1] === fileURLToPath(import.meta.url))
  void runMain('job-scheduler', () => main().then(() => {}));
