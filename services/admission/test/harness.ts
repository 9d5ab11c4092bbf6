import { randomUUID } from 'node:crypto';
import { type Client, createClient, type Interceptor } from '@connectrpc/connect';
import { DEV_IDEMPOTENCY_KEY_SECRET, StackPki, uniqueSuffix } from '@dnc/devstack';
import {
  type AdapterEntry,
  adapterIdentity,
  announceAdapter,
  connectNats,
  createRedis,
  grpcTransport,
  type NatsConnection,
  natsNames,
  OrgAssertionIssuer,
  openBucket,
  parseConfig,
  readPublicReason,
  type Security,
  signAdapterEntry,
} from '@dnc/kit';
import { admissionv1, quotav1 } from '@dnc/proto';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import {
  dropDatabase,
  dropNatsPrefix,
  TEST_NATS_URL,
  uniqueDatabaseUrl,
} from '../../../test/support/stack.js';
import { jobsConfig } from '../../job-scheduler/src/config.js';
import { type RunningJobScheduler, startJobScheduler } from '../../job-scheduler/src/server.js';
import { quotaConfig } from '../../quota/src/config.js';
import { type RunningQuota, startQuota } from '../../quota/src/server.js';
import { admissionConfig } from '../src/config.js';
import { type RunningAdmission, startAdmission } from '../src/server.js';

export interface AdmissionClients {
  admission: Client<typeof admissionv1.AdmissionService>;
  admin: Client<typeof admissionv1.AdmissionAdminService>;
}

/**
 * Quota and admission in-process on port 0 against the real PostgreSQL, Redis and NATS, with a unique
 * database, NATS prefix and Redis prefix. Adapters are simulated by their discovery entries only.
 */
/** A harness started before the file's tests, with a registry adapter of `country`, and stopped after. */
export function startedHarness(country = 'mx'): Harness {
  const h = new Harness();
  beforeAll(async () => {
    await h.start();
    await h.adapter(country);
  });
  afterAll(async () => {
    await h.stop();
  });
  return h;
}

export class Harness {
  quota!: RunningQuota;
  instances: RunningAdmission[] = [];
  quotaAdmin!: Client<typeof quotav1.QuotaAdminService>;
  nc!: NatsConnection;
  private readonly adapters = new Map<string, AdapterEntry>();
  private heartbeat: NodeJS.Timeout | undefined;
  readonly databaseUrl = uniqueDatabaseUrl('admission');
  readonly prefix = `T${uniqueSuffix()}_`;
  /** Real mutual TLS: each service its certificate, the test calls as the gateway and the operator. */
  pki!: StackPki;
  private gateway!: Security;
  private operator!: Security;
  /** Signs as admission would answer Authenticate: the gateway's Admit calls carry it. */
  assertions!: OrgAssertionIssuer;
  /** The job scheduler's API, when the harness was started with one (`start(..., { scheduler: true })`). */
  scheduler: RunningJobScheduler | undefined;

  /**
   * `quotaDatabaseUrl`: where quota reaches PostgreSQL, when not `databaseUrl` itself (the same database
   * behind a fault-injecting proxy).
   */
  async start(
    env: Record<string, string> = {},
    quotaDatabaseUrl = this.databaseUrl,
    options: { scheduler?: boolean; schedulerEnv?: Record<string, string> } = {},
  ): Promise<this> {
    this.pki = await StackPki.create();
    await this.pki.write('quota', 'quota');
    await this.pki.write('admission', 'admission');
    this.gateway = await this.pki.security('gateway');
    this.operator = await this.pki.security('operator');
    this.assertions = new OrgAssertionIssuer(await this.pki.security('admission'));
    this.quota = await startQuota(
      parseConfig(quotaConfig, {
        DATABASE_URL: quotaDatabaseUrl,
        DNC_GRPC_PORT: '0',
        DNC_METRICS_PORT: '0',
        DNC_LOG_LEVEL: 'silent',
        ...this.pki.env('quota'),
      }),
    );
    this.quotaAdmin = createClient(
      quotav1.QuotaAdminService,
      grpcTransport(`http://127.0.0.1:${this.quota.adminPort}`, [], {
        security: this.operator,
        peer: 'quota',
      }),
    );
    if (options.scheduler) await this.startScheduler(options.schedulerEnv);
    await this.addInstance(env);
    this.nc = await connectNats(TEST_NATS_URL, 'admission-test');
    this.heartbeat = setInterval(() => void this.announceAll(), 1000);
    return this;
  }

  /** The job scheduler's API role on the same database, NATS prefix and quota. */
  private async startScheduler(env: Record<string, string> = {}): Promise<void> {
    await this.pki.write('job-scheduler', 'job-scheduler');
    this.scheduler = await startJobScheduler(
      parseConfig(jobsConfig, {
        DNC_ROLE: 'api',
        DATABASE_URL: this.databaseUrl,
        NATS_URL: TEST_NATS_URL,
        DNC_NATS_PREFIX: this.prefix,
        DNC_REDIS_PREFIX: this.prefix,
        DNC_QUOTA_ADDR: `http://127.0.0.1:${this.quota.port}`,
        DNC_KEKS: `k1:${Buffer.alloc(32, 9).toString('base64')}`,
        DNC_KEK_ACTIVE_ID: 'k1',
        DNC_GRPC_PORT: '0',
        DNC_METRICS_PORT: '0',
        DNC_LOG_LEVEL: 'silent',
        ...this.pki.env('job-scheduler'),
        ...env,
      }),
    );
  }

  /** One more admission process-equivalent (a replica) on the same stores. */
  async addInstance(env: Record<string, string> = {}): Promise<AdmissionClients> {
    const running = await startAdmission(
      parseConfig(admissionConfig, {
        DATABASE_URL: this.databaseUrl,
        NATS_URL: TEST_NATS_URL,
        DNC_NATS_PREFIX: this.prefix,
        DNC_REDIS_PREFIX: this.prefix,
        DNC_QUOTA_ADDR: `http://127.0.0.1:${this.quota.port}`,
        // Without a job-scheduler, every FenceJob fails: v2 claims stay as they are, never undone.
        DNC_JOBS_ADDR: `http://127.0.0.1:${this.scheduler?.port ?? 9}`,
        // Tests run the claim reconciler themselves (reconciler.reconcileOnce()), never behind their back.
        DNC_CLAIM_RECONCILE_INTERVAL_MS: '600000',
        DNC_QUOTA_ADMIN_ADDR: `http://127.0.0.1:${this.quota.adminPort}`,
        DNC_GRPC_PORT: '0',
        DNC_METRICS_PORT: '0',
        DNC_LOG_LEVEL: 'silent',
        DNC_IDEMPOTENCY_KEY_SECRET: DEV_IDEMPOTENCY_KEY_SECRET,
        ...this.pki.env('admission'),
        ...env,
      }),
    );
    this.instances.push(running);
    return this.clients(this.instances.length - 1);
  }

  clients(index = 0): AdmissionClients {
    return {
      admission: createClient(
        admissionv1.AdmissionService,
        this.transport(this.gateway, index, 'data', [this.asserting()]),
      ),
      admin: createClient(admissionv1.AdmissionAdminService, this.transport(this.operator, index, 'admin')),
    };
  }

  /** AdmissionService as the gateway, reached at `port` on this host (a proxy in front of a replica). */
  via(port: number): Client<typeof admissionv1.AdmissionService> {
    const transport = grpcTransport(`http://127.0.0.1:${port}`, [this.asserting()], {
      security: this.gateway,
      peer: 'admission',
    });
    return createClient(admissionv1.AdmissionService, transport);
  }

  /** AdmissionService as the gateway's identity, sending no organization assertion of its own. */
  unasserted(index = 0): Client<typeof admissionv1.AdmissionService> {
    return createClient(admissionv1.AdmissionService, this.transport(this.gateway, index));
  }

  /** A transport to admission instance `index` (its data or admin listener) as `caller`. */
  transport(
    caller: Security,
    index = 0,
    listener: 'data' | 'admin' = 'data',
    interceptors: Interceptor[] = [],
  ) {
    const i = this.instances[index]!;
    return grpcTransport(`http://127.0.0.1:${listener === 'admin' ? i.adminPort : i.port}`, interceptors, {
      security: caller,
      peer: 'admission',
    });
  }

  /**
   * As the gateway calls Admit for a caller it authenticated before: with admission's assertion of the
   * organization it names (AuthenticateResponse.org_assertion), unless the test set one itself.
   */
  private asserting(): Interceptor {
    const fill = (r: { orgId: string; orgAssertion: string }) => {
      if (r.orgId && !r.orgAssertion)
        r.orgAssertion = this.assertions.issue(r.orgId, 'gateway', ['admission']);
    };
    return (next) => (req) => {
      if (!req.stream && req.method.name === 'Admit') fill(req.message as never);
      if (!req.stream && req.method.name === 'AdmitMany')
        for (const r of (req.message as unknown as admissionv1.AdmitManyRequest).requests) fill(r);
      return next(req);
    };
  }

  /** Announce (and keep announcing) an adapter of the country in discovery. */
  async adapter(
    country: string,
    status: AdapterEntry['status'] = 'serving',
    maintenanceUntil?: Date,
    fields: Partial<AdapterEntry> = {},
  ) {
    this.adapters.set(country, {
      country,
      instance_id: `${country}-test`,
      address: `http://127.0.0.1:1${country === 'mx' ? '1' : '2'}000`,
      version: 'test',
      status,
      ...(maintenanceUntil ? { maintenance_until: maintenanceUntil.toISOString() } : {}),
      snapshot_id: 's1',
      registry_size: 0,
      updated_at: new Date().toISOString(),
      ...fields,
    });
    await this.announceAll();
    // Let every instance's watch see it.
    await new Promise((r) => setTimeout(r, 300));
  }

  /** Entries signed as each country's adapter signs its own (admission uses no unsigned entry). */
  private async announceAll(): Promise<void> {
    if (this.adapters.size === 0) return;
    const kv = await openBucket(this.nc, natsNames(this.prefix).adaptersBucket);
    for (const e of this.adapters.values()) {
      const signer = await this.adapterSecurity(e.country);
      await announceAdapter(kv, signAdapterEntry(signer, { ...e, updated_at: new Date().toISOString() }));
    }
  }

  private readonly signers = new Map<string, Promise<Security>>();

  private adapterSecurity(country: string): Promise<Security> {
    let signer = this.signers.get(country);
    if (!signer) {
      signer = this.pki.security(adapterIdentity(country));
      this.signers.set(country, signer);
    }
    return signer;
  }

  /** Organization with one key and an active, activated purchase of each country given. */
  async customer(countries: string[] = ['mx'], quota = 1_000_000, client = this.clients()) {
    const { orgId } = await client.admin.createOrganization({ name: `org ${randomUUID().slice(0, 8)}` });
    const { keyId, apiKey } = await client.admin.createApiKey({ orgId });
    for (const country of countries) {
      const { purchase } = await client.admin.createPurchase({ orgId, country, monthlyQuota: BigInt(quota) });
      await client.admin.payPurchase({ purchaseId: purchase!.purchaseId });
      await client.admin.activatePurchase({ purchaseId: purchase!.purchaseId });
    }
    return { orgId, keyId, apiKey };
  }

  async account(orgId: string, country: string) {
    const { accounts } = await this.quotaAdmin.getQuota({ orgId });
    const a = accounts.find((x) => x.country === country);
    return { limit: Number(a?.limit ?? 0), used: Number(a?.used ?? 0), reserved: Number(a?.reserved ?? 0) };
  }

  /** Lock the quota accounts of `orgId` for `ms` (as a slow commit would): `released` once free again. */
  async holdAccount(orgId: string, ms: number): Promise<{ released: Promise<void> }> {
    const db = new pg.Client({ connectionString: this.databaseUrl });
    await db.connect();
    await db.query('BEGIN');
    await db.query('SELECT 1 FROM quota.accounts WHERE org_id = $1 FOR UPDATE', [orgId]);
    const released = new Promise((r) => setTimeout(r, ms)).then(async () => {
      await db.query('COMMIT');
      await db.end();
    });
    return { released };
  }

  async sql(text: string, params: unknown[] = []) {
    const db = new pg.Client({ connectionString: this.databaseUrl });
    await db.connect();
    try {
      return await db.query(text, params);
    } finally {
      await db.end();
    }
  }

  async stop(): Promise<void> {
    if (this.heartbeat) clearInterval(this.heartbeat);
    for (const i of this.instances) await i.service.shutdown('test end');
    await this.scheduler?.service.shutdown('test end');
    await this.quota?.service.shutdown('test end');
    await this.nc?.close();
    await dropDatabase(this.databaseUrl);
    await dropNatsPrefix(this.prefix);
    this.pki?.close();
    const redis = createRedis(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379');
    if (redis.status !== 'ready') await new Promise((r) => redis.once('ready', r));
    const keys = await redis.keys(`${this.prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  }
}

/** An Admit request of customer `c` for mx: a fresh key and fingerprint, 10 inputs, v1, unless `over` says otherwise. */
export function admitReq(
  c: { orgId: string; keyId: string },
  over: Partial<Omit<admissionv1.AdmitRequest, '$typeName' | '$unknown'>> = {},
) {
  return {
    orgId: c.orgId,
    keyId: c.keyId,
    country: 'mx',
    idempotencyKey: randomUUID(),
    fingerprint: fingerprint(randomUUID()),
    inputCount: 10,
    kind: admissionv1.RequestKind.SYNC,
    ...over,
  };
}

export function fingerprint(seed: string): string {
  return `v1:${Buffer.from(seed.padEnd(32, '.')).toString('hex').slice(0, 64).padEnd(64, '0')}`;
}

/** The public reason a call failed with (or 'ok'). */
export async function outcome(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return 'ok';
  } catch (error) {
    return readPublicReason(error)?.reason ?? `no-reason: ${String(error)}`;
  }
}

export async function failure(call: Promise<unknown>) {
  try {
    await call;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail');
}
