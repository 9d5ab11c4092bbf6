import { createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { StackPki } from '@dnc/devstack';
import {
  adapterIdentity,
  addressFor,
  clientIdentityInterceptors,
  clientTls,
  grpcTransport,
  parseConfig,
  RegistryAdapterCheck,
  rpcTransport,
  type Security,
} from '@dnc/kit';
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

/**
 * The certificates of this test file (real mutual TLS): each adapter its own, the test calls Check as
 * the gateway and the admin methods (and Describe) as the operator.
 */
let pki:
  | { ca: StackPki; gateway: MtlsSecurity; operator: MtlsSecurity; conformance: MtlsSecurity }
  | undefined;
type MtlsSecurity = Security & { mode: 'mtls' };
const adapterAt = new Map<string, { country: string; adminAddress: string }>();
let adapters = 0;

async function testPki() {
  if (!pki) {
    const ca = await StackPki.create();
    pki = {
      ca,
      gateway: await ca.security('gateway'),
      operator: await ca.security('operator'),
      conformance: await ca.security('conformance'),
    };
    process.once('exit', () => ca.close());
  }
  return pki;
}

/** One adapter in this process on free ports, against the real PostgreSQL and NATS. */
export async function startTestAdapter(
  env: AdapterEnv,
  country: string,
  extra: Record<string, string> = {},
): Promise<RunningAdapter> {
  const { ca } = await testPki();
  const name = `adapter-${country}-${++adapters}`;
  await ca.write(name, adapterIdentity(country));
  const config = parseConfig(adapterConfig, {
    ...ca.env(name),
    COUNTRY: country,
    DATABASE_URL: env.databaseUrl,
    NATS_URL: TEST_NATS_URL,
    DNC_NATS_PREFIX: env.natsPrefix,
    DNC_GRPC_PORT: '0',
    DNC_HEALTH_PORT: '0',
    DNC_ADMIN_PORT: '0',
    DNC_METRICS_PORT: '0',
    DNC_LOG_LEVEL: 'silent',
    DNC_SNAPSHOT_POLL_MS: '200',
    ADAPTER_HEARTBEAT_MS: '500',
    DNC_SHUTDOWN_TIMEOUT_MS: '5000',
    ...extra,
  });
  const running = await startAdapter(config);
  adapterAt.set(running.address, { country, adminAddress: running.adminAddress });
  return running;
}

/**
 * Certificate directories for the conformance kit: a Check caller's (the gateway's) and the operator's;
 * `conformance` is the identity the adapter chart's helm test Pod runs as (Check and Describe only).
 */
export function conformanceTls(): { caller: string; operator: string; conformance: string } {
  if (!pki) throw new Error('no test adapter started');
  return {
    caller: pki.gateway.material.dir,
    operator: pki.operator.material.dir,
    conformance: pki.conformance.material.dir,
  };
}

/** Clients of a test adapter: Check as the gateway, Describe (`inspect`) and the admin service as the operator. */
export function adapterClients(address: string) {
  const found = adapterAt.get(address);
  if (!pki || !found) throw new Error(`no test adapter at ${address}`);
  const peer = adapterIdentity(found.country);
  const asGateway = grpcTransport(address, [], { security: pki.gateway, peer });
  // The admin listener: RegistryAdminService and Describe, as the operator.
  const asOperator = grpcTransport(found.adminAddress, [], { security: pki.operator, peer });
  // The Connect protocol, binary (the platform's own clients) and JSON (any Connect client may use it).
  const connect = rpcTransport(address, [], { security: pki.gateway, peer });
  const tls = clientTls(pki.gateway, peer);
  const json = createConnectTransport({
    baseUrl: addressFor(pki.gateway, address),
    httpVersion: '2',
    useBinaryFormat: false,
    interceptors: clientIdentityInterceptors(pki.gateway),
    ...(tls ? { nodeOptions: tls } : {}),
  });
  // The chart's `helm test` identity, on the data listener.
  const asConformance = grpcTransport(address, [], { security: pki.conformance, peer });
  return {
    adapter: createClient(registryv1.RegistryAdapterService, asGateway),
    conformance: createClient(registryv1.RegistryAdapterService, asConformance),
    connect: createClient(registryv1.RegistryAdapterService, connect),
    json: createClient(registryv1.RegistryAdapterService, json),
    inspect: createClient(registryv1.RegistryAdapterService, asOperator),
    admin: createClient(registryv1.RegistryAdminService, asOperator),
    // Check as the platform's clients call it (kit checkAt: the answer read as bytes), per protocol.
    checks: {
      grpc: createClient(RegistryAdapterCheck, asGateway),
      connect: createClient(RegistryAdapterCheck, connect),
      json: createClient(RegistryAdapterCheck, json),
    },
  };
}

/** Load lines through the admin RPC, in chunks, as dnc-admin does. */
export async function loadLines(
  address: string,
  country: string,
  mode: registryv1.LoadMode,
  lines: string[],
  chunkSize = 1000,
  maxRejected = 0,
  allowShrink = false,
) {
  const { admin } = adapterClients(address);
  // A removal must give its as_of: here, published as of the current copy (which keeps the copy's time).
  const asOf =
    mode === registryv1.LoadMode.REMOVE ? (await admin.getRegistryStatus({})).snapshotTime : undefined;
  async function* requests() {
    yield {
      part: {
        case: 'header' as const,
        // A replace here sets a test's fixture: the registry is these lines now, whatever was loaded
        // before (the same lines loaded before and followed by others are otherwise refused as older).
        value: {
          country,
          mode,
          maxRejected: BigInt(maxRejected),
          allowShrink,
          allowOlder: mode === registryv1.LoadMode.REPLACE,
          ...(asOf ? { asOf } : {}),
        },
      },
    };
    for (let i = 0; i < lines.length; i += chunkSize) {
      yield { part: { case: 'chunk' as const, value: { lines: lines.slice(i, i + chunkSize) } } };
    }
    yield { part: { case: 'end' as const, value: { lines: BigInt(lines.length) } } };
  }
  return admin.load(requests(), { timeoutMs: 120_000 });
}
