import { fileURLToPath } from 'node:url';
import {
  createPool,
  createRedis,
  ensureDatabase,
  inTransaction,
  migrateSchema,
  PG_POOL_DEFAULT,
  type Pool,
  PostgresAuditLog,
  probePostgres,
  type Redis,
  type Service,
  startService,
} from '@dnc/kit';
import { dashboardv1 } from '@dnc/proto';
import type { FastifyInstance } from 'fastify';
import { dashboardAdminService } from './admin.js';
import { buildApp } from './app.js';
import type { DashboardConfig } from './config.js';
import { decoyHash, hashPassword, verifyPassword } from './domain/password.js';
import { SealingKeys } from './domain/sealing.js';
import type { RouteDeps } from './routes/deps.js';
import { AuditLog } from './store/audit.js';
import { DeviceStore } from './store/devices.js';
import { InvitationStore } from './store/invitations.js';
import { MemberStore } from './store/members.js';
import { sealStoredSecrets } from './store/sealing.js';
import { SessionStore } from './store/sessions.js';
import { createUpstreams } from './upstream.js';

const MIGRATIONS = fileURLToPath(new URL('../migrations', import.meta.url));
const ASSETS = fileURLToPath(new URL('../dist/ui', import.meta.url));

export interface RunningDashboard {
  service: Service;
  app: FastifyInstance;
  /** Browser-facing HTTP port. */
  port: number;
  /** grpc.health.v1 and service info (mutual TLS). */
  grpcPort: number;
  /** The admin listener: DashboardAdminService (dnc-admin user invite) and the audit log. */
  adminPort: number;
}

/** The dashboard process except signal handling: tests start it in-process on port 0. */
export function startDashboard(config: DashboardConfig): Promise<RunningDashboard> {
  return startService('dashboard', config, (service) => wire(service, config));
}

async function wire(service: Service, config: DashboardConfig): Promise<RunningDashboard> {
  const { logger } = service;
  const totpKeys = SealingKeys.parse(config.DNC_TOTP_KEYS, config.DNC_TOTP_KEY_ACTIVE_ID);
  const pool = await openPostgres(service, config, totpKeys);
  const redis = createRedis(config.REDIS_URL);
  service.onClose('redis', () => {
    redis.disconnect();
  });
  const deps = await routeDeps(service, config, pool, totpKeys);

  service.health.require('postgres', () => probePostgres(pool));
  await service.health.start();
  await service.startMetrics();

  const purge = setInterval(() => {
    deps.sessions.purgeExpired().catch((err) => logger.warn({ err }, 'expired sessions not purged'));
    deps.members
      .purgeForgottenFailures()
      .catch((err) => logger.warn({ err }, 'forgotten sign-in failures not purged'));
    deps.devices.purgeExpired().catch((err) => logger.warn({ err }, 'expired sign-in devices not purged'));
  }, config.DNC_PURGE_INTERVAL_MS);
  purge.unref();
  service.onClose('session, device and sign-in failure purge', () => clearInterval(purge));

  // The gRPC listener serves health and service info; DashboardAdminService is on the admin listener.
  const { port: grpcPort } = await service.startGrpcServer({
    port: config.DNC_GRPC_PORT,
    serviceNames: [],
    routes: () => {},
  });
  const { port: adminPort } = await service.startAdminServer({
    port: config.DNC_ADMIN_PORT,
    serviceNames: ['dnc.dashboard.v1.DashboardAdminService'],
    routes: (router) => {
      router.service(dashboardv1.DashboardAdminService, dashboardAdminService({ ...deps, logger }));
    },
    audit: new PostgresAuditLog(pool, 'dashboard', 'dashboard'),
  });
  const { app, port } = await startHttp(service, config, deps, redis);
  logger.info({ port, grpcPort, adminPort }, 'dashboard listening');
  return { service, app, port, grpcPort, adminPort };
}

/** The dashboard's schema migrated, every stored TOTP seed sealed under the active key. */
async function openPostgres(service: Service, config: DashboardConfig, totpKeys: SealingKeys) {
  const { logger } = service;
  await ensureDatabase(config.DATABASE_URL);
  await migrateSchema(config.DATABASE_URL, 'dashboard', MIGRATIONS);
  const pool = createPool(config.DATABASE_URL, config.DNC_PG_POOL_MAX ?? PG_POOL_DEFAULT.dashboard, {
    idleInTransactionTimeoutMs: config.DNC_PG_IDLE_IN_TRANSACTION_MS,
  });
  service.onClose('postgres', () => pool.end());
  // Before anything is served: no seed stays in plaintext, none under a retired key.
  const sealing = await sealStoredSecrets(pool, totpKeys);
  if (sealing.sealed || sealing.resealed) logger.info({ ...sealing }, 'TOTP seeds sealed');
  if (sealing.unopenable.length)
    logger.warn(
      { keyIds: sealing.unopenable },
      'TOTP seeds under these keys cannot be opened: those members cannot sign in until the key is configured',
    );
  return pool;
}

/** What the routes work with: the stores, the upstream services, the sign-in rules. */
async function routeDeps(
  service: Service,
  config: DashboardConfig,
  pool: Pool,
  totpKeys: SealingKeys,
): Promise<RouteDeps> {
  const upstreams = createUpstreams(
    {
      admission: config.DNC_ADMISSION_ADDR,
      quota: config.DNC_QUOTA_ADDR,
      jobs: config.DNC_JOBS_ADDR,
    },
    service.security,
  );
  const logN = config.DNC_SCRYPT_LOG_N;
  const devicePolicy = { days: config.DNC_DEVICE_DAYS, perMember: config.DNC_DEVICES_PER_MEMBER };
  return {
    sessions: new SessionStore(pool, {
      idleMinutes: config.DNC_SESSION_IDLE_MINUTES,
      absoluteHours: config.DNC_SESSION_ABSOLUTE_HOURS,
    }),
    members: new MemberStore(pool),
    invitations: new InvitationStore(pool),
    audit: new AuditLog(pool),
    transaction: (work) => inTransaction(pool, work),
    upstreams,
    origin: config.DNC_DASHBOARD_PUBLIC_URL,
    publicUrl: config.DNC_DASHBOARD_PUBLIC_URL,
    ttlHours: config.DNC_INVITATION_TTL_HOURS,
    lockout: { limit: config.DNC_LOCKOUT_FAILURES, lockMinutes: config.DNC_LOCKOUT_MINUTES },
    devices: new DeviceStore(pool, devicePolicy),
    devicePolicy,
    signInRatePerMinute: config.DNC_SIGN_IN_RATE_PER_MINUTE,
    hash: (password) => hashPassword(password, logN),
    verify: verifyPassword,
    decoyHash: await decoyHash(logN),
    totpKeys,
  };
}

/** The browser-facing HTTP server (fastify), closed with the service, idle keep-alive connections first. */
async function startHttp(service: Service, config: DashboardConfig, deps: RouteDeps, redis: Redis) {
  const app = await buildApp({
    deps,
    logger: service.logger,
    assetsDir: config.DNC_DASHBOARD_ASSETS ?? ASSETS,
    redis,
    redisPrefix: config.DNC_REDIS_PREFIX,
    trustProxyHops: config.DNC_TRUST_PROXY_HOPS,
    ready: () => service.health.serving,
    requestTimeoutMs: config.DNC_DASHBOARD_REQUEST_TIMEOUT_MS,
  });
  await app.listen({ port: config.DNC_DASHBOARD_PORT, host: config.DNC_DASHBOARD_HOST });
  service.onClose('http server', async () => {
    const idle = setInterval(() => app.server.closeIdleConnections(), 100);
    try {
      await app.close();
    } finally {
      clearInterval(idle);
    }
  });
  return { app, port: (app.server.address() as { port: number }).port };
}
