import { createClient } from '@connectrpc/connect';
import { StackPki } from '@dnc/devstack';
import { grpcTransport, parseConfig } from '@dnc/kit';
import { quotav1 } from '@dnc/proto';
import { dropDatabase, uniqueDatabaseUrl } from '../../../test/support/stack.js';
import { quotaConfig } from '../src/config.js';
import { type RunningQuota, startQuota } from '../src/server.js';

export interface TestQuota {
  quota: RunningQuota;
  databaseUrl: string;
  pki: StackPki;
  client: ReturnType<typeof createClient<typeof quotav1.QuotaService>>;
  admin: ReturnType<typeof createClient<typeof quotav1.QuotaAdminService>>;
  /** The current month's figures of (org, country). */
  account(orgId: string, country: string): Promise<{ limit: number; used: number; reserved: number }>;
  stop(): Promise<void>;
}

/** The quota service in this process on a database of its own, called over gRPC (sweeper idle). */
export async function startTestQuota(label: string): Promise<TestQuota> {
  const databaseUrl = uniqueDatabaseUrl(label);
  // Real mutual TLS: the service's certificate and its callers' (admission, the operator).
  const pki = await StackPki.create();
  await pki.write('quota', 'quota');
  const quota = await startQuota(
    parseConfig(quotaConfig, {
      DATABASE_URL: databaseUrl,
      DNC_GRPC_PORT: '0',
      DNC_METRICS_PORT: '0',
      DNC_LOG_LEVEL: 'silent',
      DNC_SYNC_RESERVATION_TTL_SECONDS: '30',
      DNC_RESERVATION_SWEEP_INTERVAL_MS: '3600000',
      ...pki.env('quota'),
    }),
  );
  const as = async (identity: 'admission' | 'operator', port: number) =>
    grpcTransport(`http://127.0.0.1:${port}`, [], { security: await pki.security(identity), peer: 'quota' });
  // QuotaAdminService is on the admin listener.
  const admin = createClient(quotav1.QuotaAdminService, await as('operator', quota.adminPort));
  return {
    quota,
    databaseUrl,
    pki,
    client: createClient(quotav1.QuotaService, await as('admission', quota.port)),
    admin,
    async account(orgId, country) {
      const { accounts } = await admin.getQuota({ orgId });
      const a = accounts.find((x) => x.country === country)!;
      return { limit: Number(a.limit), used: Number(a.used), reserved: Number(a.reserved) };
    },
    async stop() {
      await quota.service.shutdown('test end');
      await dropDatabase(databaseUrl);
      pki.close();
    },
  };
}
