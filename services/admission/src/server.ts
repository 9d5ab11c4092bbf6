import { fileURLToPath } from 'node:url';
import { createClient } from '@connectrpc/connect';
import {
  AdapterDirectory,
  connectNats,
  createPool,
  createRedis,
  ensureDatabase,
  Gauge,
  migrateSchema,
  natsNames,
  openBucket,
  probePostgres,
  provisionJetStream,
  rpcTransport,
  Service,
  serviceClient,
} from '@dnc/kit';
import { admissionv1, healthv1, quotav1 } from '@dnc/proto';
import { admissionAdminService } from './admin.js';
import { admissionService } from './admission.js';
import type { AdmissionConfig } from './config.js';
import { LIVE_COUNTRIES } from './domain/countries.js';
import { RequestLimiter } from './limiter.js';
import { IdempotencyPurge } from './purge.js';
import { AdmissionStore } from './store.js';

const MIGRATIONS = fileURLToPath(new URL('../migrations', import.meta.url));

export interface RunningAdmission {
  service: Service;
  port: number;
  store: AdmissionStore;
  limiter: RequestLimiter;
  directory: AdapterDirectory;
  purge: IdempotencyPurge;
}

/** Everything of the admission process except signal handling: tests start it in-process on port 0. */
export async function startAdmission(config: AdmissionConfig): Promise<RunningAdmission> {
  const service = new Service({
    name: 'admission',
    version: process.env['npm_package_version'] ?? '0.1.0',
    logLevel: config.DNC_LOG_LEVEL,
    shutdownTimeoutMs: config.DNC_SHUTDOWN_TIMEOUT_MS,
    metricsPort: config.DNC_METRICS_PORT,
  });
  try {
    return await wire(service, config);
  } catch (error) {
    await service.shutdown('failed to start');
    throw error;
  }
}

async function wire(service: Service, config: AdmissionConfig): Promise<RunningAdmission> {
  const { logger, metrics } = service;
  await ensureDatabase(config.DATABASE_URL);
  await migrateSchema(config.DATABASE_URL, 'admission', MIGRATIONS);
  const pool = createPool(config.DATABASE_URL);
  service.onClose('postgres', () => pool.end());
  const store = new AdmissionStore(pool);

  const redis = createRedis(config.REDIS_URL);
  service.onClose('redis', () => {
    redis.disconnect();
  });
  const limiter = new RequestLimiter(
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
    logger,
    metrics,
  );

  // Discovery of the country adapters (NATS KV dnc_adapters), kept current by a watch.
  const nc = await connectNats(config.NATS_URL, 'admission');
  service.onClose('nats', () => nc.drain());
  await provisionJetStream(nc, config.DNC_NATS_PREFIX, config.DNC_JETSTREAM_REPLICAS);
  const names = natsNames(config.DNC_NATS_PREFIX);
  const directory = new AdapterDirectory(await openBucket(nc, names.adaptersBucket), logger);
  await directory.start();
  service.onClose('adapter directory', () => directory.stop());
  const countryStatus = await openBucket(nc, names.countryStatusBucket);
  new Gauge({
    name: 'dnc_country_adapter_serving',
    help: '1 while at least one adapter of the country is discovered and serving.',
    labelNames: ['country'],
    registers: [metrics],
    collect() {
      for (const c of LIVE_COUNTRIES)
        this.set({ country: c }, directory.instances(c).some((e) => e.status === 'serving') ? 1 : 0);
    },
  });

  const quotaTransport = rpcTransport(config.DNC_QUOTA_ADDR);
  const quota = serviceClient(quotav1.QuotaService, config.DNC_QUOTA_ADDR, 3_000);
  const quotaAdmin = serviceClient(quotav1.QuotaAdminService, config.DNC_QUOTA_ADDR, 5_000);
  const quotaHealth = createClient(healthv1.Health, quotaTransport);

  service.health.require('postgres', () => probePostgres(pool));
  service.health.require('quota', async () => {
    const r = await quotaHealth.check({ service: '' }, { timeoutMs: 800 });
    return r.status === healthv1.HealthCheckResponse_ServingStatus.SERVING;
  });
  await service.health.start();
  await service.startMetrics();

  const purge = new IdempotencyPurge(
    store,
    logger,
    config.DNC_IDEMPOTENCY_RETENTION_SECONDS,
    config.DNC_IDEMPOTENCY_PURGE_INTERVAL_MS,
  );
  const { port } = await service.startGrpcServer({
    port: config.DNC_GRPC_PORT,
    serviceNames: ['dnc.admission.v1.AdmissionService', 'dnc.admission.v1.AdmissionAdminService'],
    routes: (router) => {
      router.service(
        admissionv1.AdmissionService,
        admissionService({
          store,
          limiter,
          directory,
          quota,
          logger,
          metrics,
          defaultRateLimit: config.DNC_DEFAULT_RATE_LIMIT,
          syncClaimMs: config.DNC_SYNC_CLAIM_TIMEOUT_SECONDS * 1000,
          jobClaimMs: config.DNC_JOB_CLAIM_TIMEOUT_SECONDS * 1000,
        }),
      );
      router.service(
        admissionv1.AdmissionAdminService,
        admissionAdminService({
          store,
          directory,
          quotaAdmin,
          logger,
          defaultMonthlyQuota: config.DNC_DEFAULT_MONTHLY_QUOTA,
          async publishCountryStatus(country, until) {
            await countryStatus.put(
              country,
              JSON.stringify({ country, maintenance_until: until?.toISOString() ?? null }),
            );
          },
        }),
      );
    },
  });
  purge.start();
  service.onClose('idempotency purge', () => purge.stop());
  logger.info({ port }, 'admission listening');
  return { service, port, store, limiter, directory, purge };
}
