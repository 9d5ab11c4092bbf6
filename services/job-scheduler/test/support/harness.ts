import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { create } from '@bufbuild/protobuf';
import { type Client, ConnectError, createClient, type Interceptor } from '@connectrpc/connect';
import {
  grpcTransport,
  type Identity,
  ORG_ASSERTION_HEADER,
  OrgAssertionIssuer,
  readPublicReason,
  type Security,
} from '@dnc/kit';
import { jobsv1, quotav1, registryv1 } from '@dnc/proto';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';
import {
  startTestStack,
  TEST_NATS_URL,
  type TestStack,
  type TestStackOptions,
  uniqueDatabaseUrl,
} from '../../../../test/support/stack.js';

/**
 * The scheduler as other services see it: its processes (api + worker) beside real quota and a real
 * mx registry adapter, all separate processes, on a unique database and NATS prefix.
 */
export interface JobsHarness {
  stack: TestStack;
  jobs: Client<typeof jobsv1.JobsService>;
  /** JobsService as admission calls it (FenceJob, the claim reconciler's one method). */
  admissionJobs: Client<typeof jobsv1.JobsService>;
  admin: Client<typeof jobsv1.JobsAdminService>;
  quota: Client<typeof quotav1.QuotaService>;
  quotaAdmin: Client<typeof quotav1.QuotaAdminService>;
  registry: Client<typeof registryv1.RegistryAdminService>;
  db: pg.Pool;
  org: string;
  /** Reserve quota as admission does, then submit the job. */
  submit(phones: string[], opts?: { org?: string; jobId?: string }): Promise<jobsv1.Job>;
  waitFor(
    jobId: string,
    pred: (j: jobsv1.Job) => boolean,
    timeoutMs?: number,
    org?: string,
  ): Promise<jobsv1.Job>;
  result(jobId: string, org?: string): Promise<unknown>;
  reserved(org?: string): Promise<{ used: number; reserved: number }>;
  close(): Promise<void>;
}

/** The scheduler's processes, quota, the mx adapter seeded from `registry` (it serves with a snapshot). */
async function startJobsStack(options: TestStackOptions & { registry?: string[] }) {
  const dir = mkdtempSync(path.join(tmpdir(), 'dnc-jobs-'));
  const seedFile = path.join(dir, 'registry.txt');
  writeFileSync(seedFile, `${(options.registry ?? []).join('\n')}\n`);
  const databaseUrl = options.databaseUrl ?? uniqueDatabaseUrl('jobs');
  const stack = await startTestStack({
    databaseUrl,
    countries: ['mx'],
    skip: ['gateway', 'admission'],
    ...options,
    processEnv: {
      ...options.processEnv,
      'adapter-mx': { DNC_REGISTRY_SEED_FILE: seedFile, ...options.processEnv?.['adapter-mx'] },
    },
  });
  return { stack, dir };
}

/**
 * JobsService at `address` (a scheduler replica's own, by default the first's) as the gateway calls it:
 * each call carries admission's assertion of the organization it names (signed with an admission
 * certificate of the stack's CA, as Authenticate would answer).
 */
export async function jobsClient(
  stack: TestStack,
  address = stack.addresses.jobs,
): Promise<Client<typeof jobsv1.JobsService>> {
  const [gateway, admission] = await Promise.all([stack.security('gateway'), stack.security('admission')]);
  const transport = grpcTransport(address, [asserting(new OrgAssertionIssuer(admission))], {
    security: gateway,
    peer: 'job-scheduler',
  });
  return createClient(jobsv1.JobsService, transport);
}

/** Real mutual TLS: the test calls as the gateway (jobs), admission (quota) and the operator (admin). */
async function clientsOf(stack: TestStack) {
  const [admission, operator] = await Promise.all([stack.security('admission'), stack.security('operator')]);
  const t = (caller: Security, peer: Identity, addr: string, interceptors: Interceptor[] = []) =>
    grpcTransport(addr, interceptors, { security: caller, peer });
  return {
    jobs: await jobsClient(stack),
    admissionJobs: createClient(jobsv1.JobsService, t(admission, 'job-scheduler', stack.addresses.jobs)),
    admin: createClient(jobsv1.JobsAdminService, t(operator, 'job-scheduler', stack.addresses.jobsAdmin)),
    quota: createClient(quotav1.QuotaService, t(admission, 'quota', stack.addresses.quota)),
    quotaAdmin: createClient(quotav1.QuotaAdminService, t(operator, 'quota', stack.addresses.quotaAdmin)),
    registry: createClient(
      registryv1.RegistryAdminService,
      t(operator, 'registry-adapter-mx', stack.addresses.adapterAdmins['mx']!),
    ),
  };
}

export async function startJobsHarness(
  options: TestStackOptions & { registry?: string[] } = {},
): Promise<JobsHarness> {
  const { stack, dir } = await startJobsStack(options);
  const clients = await clientsOf(stack);
  const { jobs, quota, quotaAdmin } = clients;
  const db = new pg.Pool({ connectionString: stack.databaseUrl, max: 2 });
  const org = randomUUID();
  await quotaAdmin.setLimit({ orgId: org, country: 'mx', limit: 10_000_000n });

  const h: JobsHarness = {
    stack,
    ...clients,
    db,
    org,
    async submit(phones, opts = {}) {
      const orgId = opts.org ?? org;
      const jobId = opts.jobId ?? randomUUID();
      const reservationId = `res_${jobId}`;
      await quota.reserve({
        reservationId,
        orgId,
        country: 'mx',
        amount: BigInt(phones.length),
        kind: quotav1.UsageKind.JOB,
      });
      const r = await jobs.submitJob({
        jobId,
        orgId,
        reservationId,
        country: 'mx',
        canonicalPhones: Buffer.from(JSON.stringify(phones)),
      });
      return r.job!;
    },
    async waitFor(jobId, pred, timeoutMs = 30_000, orgId = org) {
      const deadline = Date.now() + timeoutMs;
      let last: jobsv1.Job | undefined;
      while (Date.now() < deadline) {
        last = (await jobs.getJob({ orgId, jobId })).job!;
        if (pred(last)) return last;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`job did not reach the expected state; last ${jobsv1.JobStatus[last?.status ?? 0]}`);
    },
    async result(jobId, orgId = org) {
      const parts: Uint8Array[] = [];
      for await (const m of jobs.getJobResult({ orgId, jobId })) parts.push(m.chunk);
      return JSON.parse(Buffer.concat(parts).toString('utf8'));
    },
    async reserved(orgId = org) {
      const r = await quotaAdmin.getQuota({ orgId });
      const a = r.accounts.find((x) => x.country === 'mx');
      return { used: Number(a?.used ?? 0), reserved: Number(a?.reserved ?? 0) };
    },
    async close() {
      await db.end();
      await stack.teardown();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return h;
}

/**
 * The sweep alone: every 0.5 s, a 2 s hard cap, no worker (jobs stay queued until the sweep ends them).
 */
export async function startSweepHarness(): Promise<JobsHarness> {
  const h = await startJobsHarness({
    registry: ['+525581234567'],
    env: { DNC_SWEEP_INTERVAL_MS: '500', DNC_JOB_HARD_CAP_SECONDS: '2' },
  });
  await h.stack.stop('job-worker');
  return h;
}

/** Load the mx registry through the adapter's streamed Load. */
export async function loadRegistry(h: JobsHarness, lines: string[]): Promise<void> {
  async function* requests() {
    yield create(registryv1.LoadRequestSchema, {
      part: { case: 'header', value: { country: 'mx', mode: registryv1.LoadMode.REPLACE } },
    });
    for (let i = 0; i < lines.length; i += 50_000)
      yield create(registryv1.LoadRequestSchema, {
        part: { case: 'chunk', value: { lines: lines.slice(i, i + 50_000) } },
      });
    yield create(registryv1.LoadRequestSchema, {
      part: { case: 'end', value: { lines: BigInt(lines.length) } },
    });
  }
  await h.registry.load(requests(), { timeoutMs: 120_000 });
}

/** A client interceptor that attaches admission's assertion of the organization the request names. */
function asserting(issuer: OrgAssertionIssuer): Interceptor {
  const sign = (message: unknown) => {
    const org = (message as { orgId?: string }).orgId;
    return org ? issuer.issue(org, 'gateway', ['job-scheduler']) : '';
  };
  return (next) => async (req) => {
    if (!req.stream) {
      const token = sign(req.message);
      if (token) req.header.set(ORG_ASSERTION_HEADER, token);
      return next(req);
    }
    // GetJobResult (server-streaming): its one request message, read and passed on.
    const messages: unknown[] = [];
    for await (const m of req.message) messages.push(m);
    const token = sign(messages[0]);
    if (token) req.header.set(ORG_ASSERTION_HEADER, token);
    return next({
      ...req,
      message: (async function* () {
        yield* messages;
      })() as typeof req.message,
    });
  };
}

/** Every value stored in the jobs schema, searched for plaintext: text as is, bytea as raw bytes. */
export async function plaintextInDatabase(db: pg.Pool, needles: string[]): Promise<string[]> {
  const tables = await db.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.tables WHERE table_schema = 'jobs'`,
  );
  const found: string[] = [];
  for (const { table_name } of tables.rows) {
    const rows = await db.query(`SELECT * FROM jobs."${table_name}"`);
    for (const row of rows.rows) {
      for (const value of Object.values(row)) {
        const bytes = Buffer.isBuffer(value) ? value : Buffer.from(String(value), 'utf8');
        for (const n of needles) if (bytes.includes(Buffer.from(n, 'utf8'))) found.push(`${table_name}:${n}`);
      }
    }
  }
  return found;
}

export const status = jobsv1.JobStatus;

/** The public reason a call was refused with; undefined when it succeeded. */
export async function reason(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (error) {
    return readPublicReason(ConnectError.from(error))?.reason;
  }
}

/**
 * Wait until the country's adapter announces itself as serving again in discovery (after a drill is
 * cleared, its entry is refreshed within a heartbeat).
 */
export async function waitAdapterServing(
  stack: TestStack,
  country: string,
  timeoutMs = 10_000,
): Promise<void> {
  const nc = await connect({ servers: TEST_NATS_URL });
  try {
    const kv = await new Kvm(nc).open(`${stack.natsPrefix}dnc_adapters`);
    const since = Date.now();
    const deadline = since + timeoutMs;
    while (Date.now() < deadline) {
      const keys = await kv.keys(`${country}.>`);
      for await (const key of keys) {
        const e = await kv.get(key);
        const entry = e?.string()
          ? (JSON.parse(e.string()) as { status: string; updated_at: string })
          : undefined;
        if (entry?.status === 'serving' && Date.parse(entry.updated_at) > since) return;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`adapter ${country} did not announce serving`);
  } finally {
    await nc.close();
  }
}
