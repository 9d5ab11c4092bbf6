import { fileURLToPath } from 'node:url';
import {
  createPool,
  ensureDatabase,
  loadConfig,
  migrateSchema,
  probePostgres,
  runMain,
  Service,
} from '@dnc/kit';
import { quotaConfig } from './config.js';
import { quotaRoutes } from './routes.js';

const MIGRATIONS = fileURLToPath(new URL('../migrations', import.meta.url));

export async function main(): Promise<void> {
  const config = loadConfig(quotaConfig);
  const service = new Service({
    name: 'quota',
    version: process.env['npm_package_version'] ?? '0.1.0',
    logLevel: config.DNC_LOG_LEVEL,
    shutdownTimeoutMs: config.DNC_SHUTDOWN_TIMEOUT_MS,
    metricsPort: config.DNC_METRICS_PORT,
  });
  service.handleSignals();
  await ensureDatabase(config.DATABASE_URL);
  await migrateSchema(config.DATABASE_URL, 'quota', MIGRATIONS);
  const pool = createPool(config.DATABASE_URL);
  service.onClose('postgres', () => pool.end());
  service.health.require('postgres', () => probePostgres(pool));
  await service.health.start();
  await service.startMetrics();
  const { port } = await service.startGrpcServer({
    port: config.DNC_GRPC_PORT,
    serviceNames: ['dnc.quota.v1.QuotaService', 'dnc.quota.v1.QuotaAdminService'],
    routes: quotaRoutes({ pool, logger: service.logger, metrics: service.metrics }),
  });
  service.logger.info({ port }, 'quota listening');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) void runMain('quota', main);
