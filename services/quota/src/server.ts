import { fileURLToPath } from 'node:url';
import {
  createPool,
  ensureDatabase,
  migrateSchema,
  PG_POOL_DEFAULT,
  PostgresAuditLog,
  probePostgres,
  type Service,
  startService,
} from '@dnc/kit';
import { quotav1 } from '@dnc/proto';
import type { QuotaConfig } from './config.js';
import { organizationQuotaService } from './organization.js';
import { reservationAgeGauge } from './reservation-age.js';
import { quotaRoutes } from './routes.js';
import { Ledger } from './store/ledger.js';
import { ReservationSweeper } from './sweeper.js';

const MIGRATIONS = fileURLToPath(new URL('../migrations', import.meta.url));

export interface RunningQuota {
  service: Service;
  port: number;
  /** The admin listener: QuotaAdminService and the audit log. */
  adminPort: number;
  ledger: Ledger;
  sweeper: ReservationSweeper;
}

/** Everything of the quota process except signal handling: tests start it in-process on port 0. */
export function startQuota(config: QuotaConfig): Promise<RunningQuota> {
  return startService('quota', config, async (service) => {
    await ensureDatabase(config.DATABASE_URL);
    await migrateSchema(config.DATABASE_URL, 'quota', MIGRATIONS);
    const pool = createPool(config.DATABASE_URL, config.DNC_PG_POOL_MAX ?? PG_POOL_DEFAULT.quota, {
      idleInTransactionTimeoutMs: config.DNC_PG_IDLE_IN_TRANSACTION_MS,
    });
    service.onClose('postgres', () => pool.end());
    service.health.require('postgres', () => probePostgres(pool));
    await service.health.start();
    await service.startMetrics();
    const ledger = new Ledger(pool);
    reservationAgeGauge(pool, service.metrics);
    const sweeper = new ReservationSweeper(
      ledger,
      service.logger,
      config.DNC_SYNC_RESERVATION_TTL_SECONDS,
      config.DNC_RESERVATION_SWEEP_INTERVAL_MS,
    );
    const routes = quotaRoutes({ ledger, logger: service.logger, metrics: service.metrics });
    // Before the listeners, so it stops after the drain (closers run in reverse): a sweep in progress
    // does not hold back the GOAWAY of the calls in flight.
    sweeper.start();
    service.onClose('reservation sweeper', () => sweeper.stop());
    const { port } = await service.startGrpcServer({
      port: config.DNC_GRPC_PORT,
      serviceNames: ['dnc.quota.v1.QuotaService', 'dnc.quota.v1.OrganizationQuotaService'],
      routes: (router) => {
        routes.data(router);
        router.service(quotav1.OrganizationQuotaService, organizationQuotaService({ ledger, pool }));
      },
    });
    const { port: adminPort } = await service.startAdminServer({
      port: config.DNC_ADMIN_PORT,
      serviceNames: ['dnc.quota.v1.QuotaAdminService'],
      routes: routes.admin,
      audit: new PostgresAuditLog(pool, 'quota', 'quota'),
    });
    service.logger.info({ port, adminPort }, 'quota listening');
    return { service, port, adminPort, ledger, sweeper };
  });
}
