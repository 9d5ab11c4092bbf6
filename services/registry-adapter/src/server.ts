import { randomUUID } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  adapterIdentity,
  connectNats,
  createPool,
  ensureDatabase,
  type Logger,
  migrateSchema,
  natsCredentials,
  natsNames,
  openBucket,
  PG_POOL_DEFAULT,
  PostgresAuditLog,
  probePostgres,
  provisionJetStream,
  type Service,
  startService,
} from '@dnc/kit';
import type pg from 'pg';
import { AdapterAnnouncer } from './announcer.js';
import type { AdapterConfig } from './config.js';
import { SnapshotWatcher } from './index/snapshot-watcher.js';
import { AdapterMetrics } from './metrics.js';
import { DrillProvider } from './providers/drill-provider.js';
import { DEFAULT_MAX_AGE_SECONDS, FreshnessGuard } from './providers/freshness.js';
import { LocalProvider } from './providers/local-provider.js';
import type { RegistryProvider } from './providers/provider.js';
import { RemoteProvider } from './providers/remote-provider.js';
import { adapterRoutes } from './routes.js';
import { loadRegistry } from './store/registry-load.js';
import { RegistryStore } from './store/registry-store.js';
import { createNormalizer, keyToE164, type Normalizer, NUMBERING_RULES } from './validation.js';

const MIGRATIONS = fileURLToPath(new URL('../migrations', import.meta.url));

export interface RunningAdapter {
  service: Service;
  port: number;
  address: string;
  /** The admin listener (Load, status, drills, Describe; operator only, audited). */
  adminPort: number;
  adminAddress: string;
  instanceId: string;
  watcher?: SnapshotWatcher;
  announcer: AdapterAnnouncer;
  provider: DrillProvider;
  shutdown(): Promise<void>;
}

/** The address to announce: the configured one, else this host's port. */
function advertised(configured: string | undefined, port: number): string {
  return configured && configured !== 'http://127.0.0.1:0' ? configured : `http://127.0.0.1:${port}`;
}

/**
 * Start one registry adapter (one country) inside this process, except signal handling: store, index,
 * providers, discovery and the gRPC server. `main()` calls it with the environment; integration tests
 * call it on port 0.
 */
export function startAdapter(config: AdapterConfig): Promise<RunningAdapter> {
  const country = config.COUNTRY;
  const version = config.npm_package_version ?? '0.1.0';
  return startService(
    'registry-adapter',
    config,
    async (service) => {
      const logger = service.logger.child({ country });
      const normalizer = createNormalizer(country);
      const registry = await openRegistry(service, config, normalizer, logger);
      const provider = new DrillProvider(registry.provider);
      const { store, watcher, maxAgeSeconds } = registry;
      const metrics = new AdapterMetrics(
        service.metrics,
        country,
        () => provider.state(),
        maxAgeSeconds,
        () => watcher?.refused === true,
      );
      // gRPC health says whether the process can take work (Check AND the admin Load that brings the
      // first snapshot), so it does not wait for a snapshot: Kubernetes would otherwise keep the pod out
      // of its Service and no registry could ever be loaded. Without a snapshot the adapter is
      // `unavailable` in discovery and Check fails with country_service_temporarily_unavailable.
      await service.health.start();
      await service.startMetrics();

      const kv = await openDiscoveryBucket(service, config);

      const routes = adapterRoutes({
        country,
        version,
        normalizer,
        provider,
        ...(store ? { store } : {}),
        ...(watcher ? { onSnapshotCommitted: () => watcher.refresh() } : {}),
        drillsEnabled: config.DNC_ENABLE_DRILLS,
        loadChunkIdleMs: config.DNC_LOAD_CHUNK_IDLE_MS,
        maxAgeSeconds,
        metrics,
        logger,
      });
      const { port } = await service.startGrpcServer({
        port: config.DNC_GRPC_PORT,
        serviceNames: ['dnc.registry.v1.RegistryAdapterService'],
        routes: routes.data,
      });
      const { port: adminPort } = await service.startAdminServer({
        port: config.DNC_ADMIN_PORT,
        serviceNames: ['dnc.registry.v1.RegistryAdminService'],
        routes: routes.admin,
        audit: new PostgresAuditLog(registry.pool, registry.schema, adapterIdentity(country)),
        targets: { country },
      });
      const address = advertised(config.DNC_ADVERTISE_ADDR, port);
      const adminAddress = advertised(config.DNC_ADVERTISE_ADMIN_ADDR, adminPort);
      const { announcer, instanceId } = await startAnnouncer(service, config, kv, {
        address,
        adminAddress,
        version,
        provider,
        kind: registry.provider.kind === 'local' ? 'local' : 'remote',
        logger,
      });
      // Registered last, so it runs first on shutdown: callers stop choosing this instance before it drains.
      service.onClose('discovery entry', () => announcer.stop());
      logger.info(
        { port, adminPort, address, provider: registry.provider.kind, instance_id: instanceId },
        'registry adapter listening',
      );
      return {
        service,
        port,
        adminPort,
        address,
        adminAddress,
        instanceId,
        ...(watcher ? { watcher } : {}),
        announcer,
        provider,
        shutdown: () => service.shutdown(),
      };
    },
    { country, version, identity: adapterIdentity(country) },
  );
}

/** The discovery bucket (NATS KV dnc_adapters) this adapter announces itself in. */
async function openDiscoveryBucket(service: Service, config: AdapterConfig) {
  const nc = await connectNats(
    config.NATS_URL,
    `registry-adapter-${config.COUNTRY}`,
    natsCredentials(config),
  );
  service.onClose('nats', () => nc.drain());
  await provisionJetStream(nc, config.DNC_NATS_PREFIX, config.DNC_JETSTREAM_REPLICAS, config);
  return openBucket(nc, natsNames(config.DNC_NATS_PREFIX).adaptersBucket);
}

/** Announce this instance in discovery (signed, refreshed every heartbeat) as a new instance id. */
async function startAnnouncer(
  service: Service,
  config: AdapterConfig,
  kv: Awaited<ReturnType<typeof openDiscoveryBucket>>,
  self: {
    address: string;
    adminAddress: string;
    version: string;
    provider: DrillProvider;
    kind: 'local' | 'remote';
    logger: Logger;
  },
) {
  const instanceId = randomUUID().slice(0, 8);
  const announcer = new AdapterAnnouncer(
    kv,
    // Check answers invalid exactly as the shared rules do, never rejecting a valid number (check.ts).
    {
      country: config.COUNTRY,
      instanceId,
      address: self.address,
      adminAddress: self.adminAddress,
      version: self.version,
      numberingRules: NUMBERING_RULES,
      provider: self.kind,
    },
    () => self.provider.state(),
    config.ADAPTER_HEARTBEAT_MS,
    self.logger,
    service.security,
  );
  await announcer.start();
  return { announcer, instanceId };
}

/**
 * The registry lookups come from: the local copy (Postgres store, seeded on first start, served from
 * the in-memory index the snapshot watcher keeps current), or the registry's remote API.
 */
async function openRegistry(
  service: Service,
  config: AdapterConfig,
  normalizer: Normalizer,
  logger: Logger,
): Promise<{
  provider: RegistryProvider;
  /** The oldest snapshot served; 0: no limit (a remote registry answers live). */
  maxAgeSeconds: number;
  store?: RegistryStore;
  watcher?: SnapshotWatcher;
  /** The adapter's own schema: the registry copy (local provider) and the audit log (always). */
  pool: pg.Pool;
  schema: string;
}> {
  const country = config.COUNTRY;
  await ensureDatabase(config.DATABASE_URL);
  const pool = createPool(
    config.DATABASE_URL,
    config.DNC_PG_POOL_MAX ?? PG_POOL_DEFAULT['registry-adapter'],
    {
      idleInTransactionTimeoutMs: config.DNC_PG_IDLE_IN_TRANSACTION_MS,
    },
  );
  service.onClose('postgres', () => pool.end());
  service.health.require('postgres', () => probePostgres(pool));
  const store = new RegistryStore(pool, country, NUMBERING_RULES, config.DNC_LOAD_LOCK_IDLE_MS);
  await migrateSchema(config.DATABASE_URL, store.schema, MIGRATIONS);
  if (config.DNC_REGISTRY_PROVIDER !== 'local') {
    const provider = new RemoteProvider({
      baseUrl: config.DNC_REMOTE_REGISTRY_URL!,
      ...(config.DNC_REMOTE_REGISTRY_CA_FILE
        ? { ca: readFileSync(config.DNC_REMOTE_REGISTRY_CA_FILE, 'utf8') }
        : {}),
      country,
      toE164: (key) => keyToE164(country, key),
      batchSize: config.DNC_REMOTE_BATCH_SIZE,
      timeoutMs: config.DNC_REMOTE_TIMEOUT_MS,
      retries: config.DNC_REMOTE_RETRIES,
      logger,
    });
    service.onClose('remote registry connections', () => provider.close());
    return { provider, maxAgeSeconds: 0, pool, schema: store.schema };
  }
  if (config.DNC_REGISTRY_SEED_FILE) await seed(store, normalizer, config.DNC_REGISTRY_SEED_FILE);
  const watcher = new SnapshotWatcher(
    store,
    logger,
    config.DNC_SNAPSHOT_POLL_MS,
    config.DNC_SNAPSHOT_MAX_BEHIND_MS,
  );
  await watcher.start();
  service.onClose('snapshot watcher', () => watcher.stop());
  const maxAgeSeconds =
    config.DNC_REGISTRY_MAX_AGE_SECONDS ?? DEFAULT_MAX_AGE_SECONDS[country] ?? 30 * 86_400;
  return {
    provider: new FreshnessGuard(new LocalProvider(watcher, config.DNC_SNAPSHOT_MAX_LAG_MS), maxAgeSeconds),
    maxAgeSeconds,
    store,
    watcher,
    pool,
    schema: store.schema,
  };
}

/**
 * Load the seed file as the first snapshot when the store has none, or has one built with other numbering
 * rules (development and e2e stacks).
 */
async function seed(store: RegistryStore, normalizer: Normalizer, file: string) {
  const current = await store.current();
  if (current && store.isOwn(current)) return;
  async function* chunks(): AsyncGenerator<string[]> {
    const lines = createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY });
    let chunk: string[] = [];
    for await (const line of lines) {
      chunk.push(line);
      if (chunk.length === 10_000) {
        yield chunk;
        chunk = [];
      }
    }
    if (chunk.length) yield chunk;
  }
  await loadRegistry(store, normalizer, 'seed', chunks()).catch((error) => {
    // Another replica seeding at the same moment holds the lock; its snapshot will be picked up.
    if ((error as { kind?: string }).kind !== 'busy') throw error;
  });
}
