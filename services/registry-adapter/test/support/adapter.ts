import { createClient } from '@connectrpc/connect';
import { grpcTransport, parseConfig } from '@dnc/kit';
import { registryv1 } from '@dnc/proto';
import {
  dropDatabase,
  dropNatsPrefix,
  TEST_NATS_URL,
  uniqueDatabaseUrl,
} from '../../../../test/support/stack.js';
import { adapterConfig } from '../../src/config.js';
import { type RunningAdapter, startAdapter } from '../../src/index.js';

export interface AdapterEnv {
  databaseUrl: string;
  natsPrefix: string;
}

/** A unique database and NATS prefix for one test file; `drop()` removes both. */
export function isolatedEnv(label: string): AdapterEnv & { drop(): Promise<void> } {
  const databaseUrl = uniqueDatabaseUrl(label);
  const natsPrefix = `T${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}_`;
  return {
    databaseUrl,
    natsPrefix,
    async drop() {
      await dropDatabase(databaseUrl).catch(() => {});
      await dropNatsPrefix(natsPrefix).catch(() => {});
    },
  };
}

/** One adapter in this process on free ports, against the real PostgreSQL and NATS. */
export async function startTestAdapter(
  env: AdapterEnv,
  country: string,
  extra: Record<string, string> = {},
): Promise<RunningAdapter> {
  const config = parseConfig(adapterConfig, {
    COUNTRY: country,
    DATABASE_URL: env.databaseUrl,
    NATS_URL: TEST_NATS_URL,
    DNC_NATS_PREFIX: env.natsPrefix,
    DNC_GRPC_PORT: '0',
    DNC_METRICS_PORT: '0',
    DNC_LOG_LEVEL: 'silent',
    DNC_SNAPSHOT_POLL_MS: '200',
    ADAPTER_HEARTBEAT_MS: '500',
    DNC_SHUTDOWN_TIMEOUT_MS: '5000',
    ...extra,
  });
  return startAdapter(config);
}

export function adapterClients(address: string) {
  const transport = grpcTransport(address);
  return {
    adapter: createClient(registryv1.RegistryAdapterService, transport),
    admin: createClient(registryv1.RegistryAdminService, transport),
  };
}

/** Load lines through the admin RPC, in chunks, as dnc-admin does. */
export async function loadLines(
  address: string,
  country: string,
  mode: registryv1.LoadMode,
  lines: string[],
  chunkSize = 1000,
) {
  const { admin } = adapterClients(address);
  async function* requests() {
    yield { part: { case: 'header' as const, value: { country, mode } } };
    for (let i = 0; i < lines.length; i += chunkSize) {
      yield { part: { case: 'chunk' as const, value: { lines: lines.slice(i, i + chunkSize) } } };
    }
  }
  return admin.load(requests(), { timeoutMs: 120_000 });
}
