import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import path from 'node:path';
import type { DescService } from '@bufbuild/protobuf';
import { type Client, createClient, type Transport } from '@connectrpc/connect';
import { LIVE_COUNTRIES } from '@dnc/api-contract/limits';
import {
  connectNats,
  ensureDatabase,
  grpcTransport,
  type Identity,
  NATS_PROVISIONER,
  provisionJetStream,
  rpcTransport,
  type Security,
} from '@dnc/kit';
import { healthv1 } from '@dnc/proto';
import { runAdmin } from './admin.js';
import { processIdentity, StackPki } from './identities.js';
import { LocalNatsServer } from './nats-server.js';
import { freePort } from './ports.js';

export { LIVE_COUNTRIES };

/**
 * Process names: one per service, one worker process, one adapter per country; the second and later
 * replicas of a process are `<name>#<n>` (`gateway#2`, `adapter-co#2`).
 */
export type ProcessName =
  | 'gateway'
  | 'admission'
  | 'quota'
  | 'job-scheduler'
  | 'job-worker'
  | `${'gateway' | 'admission' | 'job-worker'}#${number}`
  | 'dashboard'
  | `adapter-${string}`;

/** How many processes of each replicated role (default 1 each): the chaos suite runs several. */
export interface Replicas {
  gateway?: number;
  admission?: number;
  'job-worker'?: number;
  /** Adapters per country. */
  adapter?: number;
}

const replicaNames = <T extends string>(name: T, count = 1): ProcessName[] =>
  Array.from({ length: Math.max(1, count) }, (_, i) => (i === 0 ? name : `${name}#${i + 1}`) as ProcessName);

export interface StackOptions {
  /** Repository root (where scripts/run.js lives). */
  root: string;
  databaseUrl: string;
  redisUrl: string;
  natsUrl: string;
  /** Isolates NATS stream, subjects and buckets of this stack. */
  natsPrefix?: string;
  countries?: readonly string[];
  /** Fixed ports for the local stack; tests leave it out and get free ports. */
  basePort?: number;
  gatewayPort?: number;
  publicBaseUrl?: string;
  /** The customer dashboard's browser-facing port (its public URL is http://127.0.0.1:<port>). */
  dashboardPort?: number;
  /** Extra environment for every process, and per process. */
  env?: Record<string, string>;
  processEnv?: Partial<Record<ProcessName, Record<string, string>>>;
  /** Directory for one log file per process; logs are also kept in memory for leak checks. */
  logDir?: string;
  /** Echo process output, prefixed with its name (the local stack). */
  echo?: boolean;
  /** Processes not to start (a test starts them itself later). */
  skip?: ProcessName[];
  replicas?: Replicas;
  /**
   * Development only: every process without TLS (DNC_INSECURE_PLAINTEXT=1, logged loudly by each).
   * The default is mutual TLS with certificates of a local CA the stack creates.
   */
  insecurePlaintext?: boolean;
  /**
   * Run the stack's own nats-server with one user per service identity and the narrowest subject
   * permissions (kit natsPermissions), instead of `natsUrl`: what `npm start` does.
   */
  privateNats?: boolean;
}

interface Managed {
  name: ProcessName;
  role: string;
  env: Record<string, string>;
  child?: ChildProcess;
  exited?: Promise<number | null>;
}

export interface StackAddresses {
  gateway: string;
  admission: string;
  quota: string;
  jobs: string;
  /** The customer dashboard (browser) and its internal admin port (DashboardAdminService). */
  dashboard: string;
  dashboardAdmin: string;
  /** The admin listeners (administrative services and the audit log; operator only). */
  admissionAdmin: string;
  quotaAdmin: string;
  jobsAdmin: string;
  adapterAdmins: Record<string, string>;
  adapters: Record<string, string>;
  metrics: Record<string, number>;
  /** Every gateway replica's own address (`gateway` is the public one, a balancer's with replicas). */
  gateways: string[];
  /** Every adapter replica's own address, by country. */
  adapterReplicas: Record<string, string[]>;
}

/**
 * Every service as its own process (`node scripts/run.js <role>`), wired by environment, with one
 * database and one NATS prefix. Used by `npm start`, the end-to-end tests and the benchmark.
 */
export class Stack {
  readonly processes = new Map<ProcessName, Managed>();
  readonly addresses: StackAddresses;
  readonly baseUrl: string;
  private readonly output: string[] = [];
  private readonly files = new Map<ProcessName, WriteStream>();

  private constructor(
    readonly options: StackOptions,
    addresses: StackAddresses,
    readonly commonEnv: Record<string, string>,
    /** The stack's local CA and certificates (one per process, the operator's, test callers'). */
    readonly pki: StackPki,
    /** The stack's own nats-server with per-service users (privateNats). */
    readonly nats?: LocalNatsServer,
  ) {
    this.addresses = addresses;
    this.baseUrl = addresses.gateway;
  }

  static async create(options: StackOptions): Promise<Stack> {
    const countries = options.countries ?? LIVE_COUNTRIES;
    const r = options.replicas ?? {};
    let next = options.basePort;
    const port = async () => (next === undefined ? freePort() : next++);
    const gatewayPort = options.gatewayPort ?? (await port());
    const grpc = {
      admission: await port(),
      quota: await port(),
      jobs: await port(),
      dashboard: await port(),
    };
    const dashboardPort = options.dashboardPort ?? (await port());
    const adapterPorts: Record<string, number> = {};
    for (const c of countries) adapterPorts[c] = await port();
    const metrics: Record<string, number> = {};
    const gateways = replicaNames('gateway', r.gateway);
    const admissions = replicaNames('admission', r.admission);
    const adapterNames = countries.flatMap((c) => replicaNames(`adapter-${c}`, r.adapter));
    const names: ProcessName[] = [
      ...gateways,
      ...admissions,
      'quota',
      'job-scheduler',
      ...replicaNames('job-worker', r['job-worker']),
      'dashboard',
      ...adapterNames,
    ];
    for (const n of names) metrics[n] = await port();
    const workerGrpc = await port();
    // The first replica of each role takes the ports above; the others get their own.
    const ownPort: Partial<Record<ProcessName, number>> = { gateway: gatewayPort, admission: grpc.admission };
    for (const c of countries) ownPort[`adapter-${c}`] = adapterPorts[c]!;
    for (const n of names) if (n.includes('#')) ownPort[n] = await port();
    // The admin listener of each process that has one (operator only, audited).
    const adminPort: Partial<Record<ProcessName, number>> = {};
    for (const n of names)
      if (/^(admission|quota|job-scheduler|dashboard|adapter-)/.test(n)) adminPort[n] = await port();
    const url = (p: number) => `http://127.0.0.1:${p}`;
    const addresses: StackAddresses = {
      gateway: options.publicBaseUrl ?? url(gatewayPort),
      admission: url(grpc.admission),
      quota: url(grpc.quota),
      jobs: url(grpc.jobs),
      dashboard: url(dashboardPort),
      dashboardAdmin: url(adminPort.dashboard!),
      admissionAdmin: url(adminPort.admission!),
      quotaAdmin: url(adminPort.quota!),
      jobsAdmin: url(adminPort['job-scheduler']!),
      adapterAdmins: Object.fromEntries(countries.map((c) => [c, url(adminPort[`adapter-${c}`]!)])),
      adapters: Object.fromEntries(countries.map((c) => [c, url(adapterPorts[c]!)])),
      metrics,
      gateways: gateways.map((n) => url(ownPort[n]!)),
      adapterReplicas: Object.fromEntries(
        countries.map((c) => [c, replicaNames(`adapter-${c}`, r.adapter).map((n) => url(ownPort[n]!))]),
      ),
    };
    const commonEnv: Record<string, string> = {
      DATABASE_URL: options.databaseUrl,
      REDIS_URL: options.redisUrl,
      NATS_URL: options.natsUrl,
      DNC_NATS_PREFIX: options.natsPrefix ?? '',
      DNC_ADMISSION_ADDR: addresses.admission,
      DNC_QUOTA_ADDR: addresses.quota,
      DNC_QUOTA_ADMIN_ADDR: addresses.quotaAdmin,
      DNC_JOBS_ADDR: addresses.jobs,
      DNC_PUBLIC_BASE_URL: addresses.gateway,
      DNC_GATEWAY_PORT: String(gatewayPort),
      DNC_FINGERPRINT_SECRET:
        options.env?.['DNC_FINGERPRINT_SECRET'] ?? 'local-development-fingerprint-secret',
      DNC_KEKS: options.env?.['DNC_KEKS'] ?? `local1:${Buffer.alloc(32, 7).toString('base64')}`,
      DNC_KEK_ACTIVE_ID: options.env?.['DNC_KEK_ACTIVE_ID'] ?? 'local1',
      DNC_ENABLE_DRILLS: '1',
      DNC_LOG_LEVEL: 'info',
      ...options.env,
    };
    if (options.insecurePlaintext) commonEnv['DNC_INSECURE_PLAINTEXT'] = '1';
    const pki = await StackPki.create();
    const nats = options.privateNats ? await privateNatsOf(pki, options, countries) : undefined;
    if (nats) commonEnv['NATS_URL'] = nats.url;
    const stack = new Stack(options, addresses, commonEnv, pki, nats);
    const roleEnv: Partial<Record<ProcessName, Record<string, string>>> = {
      quota: { DNC_GRPC_PORT: String(grpc.quota) },
      'job-scheduler': { DNC_GRPC_PORT: String(grpc.jobs) },
      dashboard: {
        DNC_GRPC_PORT: String(grpc.dashboard),
        DNC_DASHBOARD_PORT: String(dashboardPort),
        DNC_DASHBOARD_PUBLIC_URL: addresses.dashboard,
        // A fixed development key, as for DNC_KEKS (the demo database outlives a stack); only the dashboard has it.
        DNC_TOTP_KEYS: options.env?.['DNC_TOTP_KEYS'] ?? `local1:${Buffer.alloc(32, 11).toString('base64')}`,
        DNC_TOTP_KEY_ACTIVE_ID: options.env?.['DNC_TOTP_KEY_ACTIVE_ID'] ?? 'local1',
      },
    };
    // Gateway replica i talks to admission replica i (round-robin when there are fewer).
    gateways.forEach((n, i) => {
      roleEnv[n] = {
        DNC_GATEWAY_PORT: String(ownPort[n]),
        DNC_ADMISSION_ADDR: url(ownPort[admissions[i % admissions.length]!]!),
      };
    });
    for (const n of admissions) roleEnv[n] = { DNC_GRPC_PORT: String(ownPort[n]) };
    for (const n of names.filter((x) => x.startsWith('job-worker')))
      roleEnv[n] = { DNC_GRPC_PORT: String(ownPort[n] ?? workerGrpc) };
    for (const n of adapterNames) {
      roleEnv[n] = {
        COUNTRY: n.slice('adapter-'.length).split('#')[0]!,
        DNC_GRPC_PORT: String(ownPort[n]),
        DNC_ADVERTISE_ADDR: url(ownPort[n]!),
        DNC_ADVERTISE_ADMIN_ADDR: url(adminPort[n]!),
      };
    }
    for (const name of names) {
      const base = name.split('#')[0]!;
      const role = base.startsWith('adapter-') ? 'registry-adapter' : base;
      // Each process its own certificate: its identity in a SPIFFE URI, signed by the stack's CA.
      await pki.write(name, processIdentity(name));
      stack.processes.set(name, {
        name,
        role,
        env: {
          ...roleEnv[name],
          DNC_METRICS_PORT: String(metrics[name]),
          ...(role === 'gateway' ? {} : { DNC_HEALTH_PORT: String(await port()) }),
          ...(adminPort[name] ? { DNC_ADMIN_PORT: String(adminPort[name]) } : {}),
          ...pki.env(name),
          ...(nats && NATS_USERS.test(processIdentity(name)) ? nats.env(processIdentity(name)) : {}),
          ...options.processEnv?.[name],
        },
      });
    }
    await pki.write('operator', 'operator');
    if (options.logDir) mkdirSync(options.logDir, { recursive: true });
    return stack;
  }

  /** Start every process (dependencies first) and wait until each one is serving. */
  async up(): Promise<this> {
    // Created once here rather than raced by every process.
    await ensureDatabase(this.options.databaseUrl);
    const skip = new Set(this.options.skip ?? []);
    const all = [...this.processes.keys()];
    const of = (...bases: string[]) => all.filter((n) => bases.includes(n.split('#')[0]!));
    const order: ProcessName[][] = [
      ['quota', ...all.filter((n) => n.startsWith('adapter-'))],
      of('admission', 'job-scheduler', 'job-worker'),
      [...of('gateway'), 'dashboard'],
    ];
    for (const group of order) {
      await Promise.all(group.filter((n) => !skip.has(n)).map((n) => this.start(n)));
    }
    return this;
  }

  async start(name: ProcessName, timeoutMs = 45_000): Promise<void> {
    const p = this.processes.get(name);
    if (!p) throw new Error(`unknown process ${name}`);
    // Already running (a killed process has a signalCode and no exitCode).
    if (p.child && p.child.exitCode === null && p.child.signalCode === null) return;
    // DNC_PROFILE_DIR=<dir>: every process writes a V8 CPU profile there when it exits (bench work).
    const profile = process.env['DNC_PROFILE_DIR'];
    const nodeArgs = profile
      ? ['--cpu-prof', `--cpu-prof-dir=${profile}`, `--cpu-prof-name=${name}.cpuprofile`]
      : [];
    const child = spawn(
      process.execPath,
      [...nodeArgs, path.join(this.options.root, 'scripts/run.js'), p.role],
      {
        env: { ...process.env, ...this.commonEnv, ...p.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    p.child = child;
    p.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    const sink = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      this.output.push(`[${name}] ${text}`);
      if (this.output.length > 200_000) this.output.splice(0, 100_000);
      this.file(name)?.write(text);
      if (this.options.echo) {
        for (const line of text.split('\n')) if (line) process.stdout.write(`${name.padEnd(13)} | ${line}\n`);
      }
    };
    child.stdout?.on('data', sink);
    child.stderr?.on('data', sink);
    await this.waitReady(name, timeoutMs);
  }

  private file(name: ProcessName): WriteStream | undefined {
    if (!this.options.logDir) return undefined;
    let f = this.files.get(name);
    if (!f) {
      f = createWriteStream(path.join(this.options.logDir, `${name}.log`), { flags: 'a' });
      this.files.set(name, f);
    }
    return f;
  }

  /** Wait until the process serves: gRPC health SERVING, or the gateway's /v1/ready 200. */
  async waitReady(name: ProcessName, timeoutMs = 45_000): Promise<void> {
    const p = this.processes.get(name)!;
    const deadline = Date.now() + timeoutMs;
    const gateway = p.role === 'gateway';
    // The plaintext health listener, as a kubelet probe asks (no client certificate).
    const health = gateway
      ? undefined
      : createClient(healthv1.Health, grpcTransport(`http://127.0.0.1:${p.env['DNC_HEALTH_PORT']}`));
    while (Date.now() < deadline) {
      if (p.child?.exitCode !== null && p.child?.exitCode !== undefined) {
        throw new Error(
          `${name} exited with code ${p.child.exitCode} while starting:\n${this.logsOf(name).slice(-4000)}`,
        );
      }
      try {
        if (health) {
          const r = await health.check({ service: '' }, { timeoutMs: 1000 });
          if (r.status === healthv1.HealthCheckResponse_ServingStatus.SERVING) return;
        } else {
          const r = await fetch(`http://127.0.0.1:${p.env['DNC_GATEWAY_PORT']}/v1/ready`, {
            signal: AbortSignal.timeout(1000),
          });
          if (r.status === 200) return;
        }
      } catch {
        // not up yet
      }
      await new Promise((r) => setTimeout(r, 150));
    }
    throw new Error(
      `${name} did not become ready within ${timeoutMs} ms:\n${this.logsOf(name).slice(-4000)}`,
    );
  }

  /** Stop a process with a signal (default SIGTERM: graceful) and wait for it to exit. */
  async stop(name: ProcessName, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    const p = this.processes.get(name);
    if (!p?.child || p.child.exitCode !== null || p.child.signalCode !== null)
      return p?.child?.exitCode ?? null;
    p.child.kill(signal);
    const code = await Promise.race([
      p.exited!,
      new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 40_000)),
    ]);
    if (code === 'timeout') {
      p.child.kill('SIGKILL');
      return p.exited!;
    }
    return code;
  }

  /** `kill -9`: no drain, no cleanup. */
  kill(name: ProcessName): Promise<number | null> {
    return this.stop(name, 'SIGKILL');
  }

  child(name: ProcessName): ChildProcess | undefined {
    return this.processes.get(name)?.child;
  }

  /** Everything every process wrote, for leak checks. */
  logs(): string {
    return this.output.join('');
  }

  logsOf(name: ProcessName): string {
    const prefix = `[${name}] `;
    return this.output
      .filter((l) => l.startsWith(prefix))
      .map((l) => l.slice(prefix.length))
      .join('');
  }

  /** Environment for `dnc-admin` against this stack: the operator's certificate, the addresses. */
  adminEnv(): Record<string, string> {
    return {
      ...this.pki.env('operator'),
      ...(this.options.insecurePlaintext ? { DNC_INSECURE_PLAINTEXT: '1' } : {}),
      DNC_ADMISSION_ADMIN_ADDR: this.addresses.admissionAdmin,
      DNC_QUOTA_ADMIN_ADDR: this.addresses.quotaAdmin,
      DNC_JOBS_ADMIN_ADDR: this.addresses.jobsAdmin,
      DNC_DASHBOARD_ADDR: this.addresses.dashboardAdmin,
      DNC_GATEWAY_URL: this.addresses.gateway,
      ...Object.fromEntries(
        Object.entries(this.addresses.adapterAdmins).map(([c, a]) => [
          `DNC_ADAPTER_ADDR_${c.toUpperCase()}`,
          a,
        ]),
      ),
    };
  }

  /** Run `dnc-admin` and parse its JSON output; rejects with its one-line error on failure. */
  admin(args: string[], input?: string): Promise<unknown> {
    return runAdmin(this.options.root, this.adminEnv(), args, input);
  }

  async close(): Promise<void> {
    const names = [...this.processes.keys()].reverse();
    await Promise.all(names.map((n) => this.stop(n)));
    await Promise.all([...this.files.values()].map((f) => new Promise((r) => f.end(r))));
    await this.nats?.stop();
    this.pki.close();
  }

  /** A caller of this stack with a fresh certificate of `identity` (tests, the benchmark). */
  async security(identity: Identity): Promise<Security> {
    if (this.options.insecurePlaintext)
      return { mode: 'plaintext', identity, trustDomain: this.pki.trustDomain };
    return this.pki.security(identity);
  }

  /** A Connect transport to `address` as `caller`, accepting only a server that proves `peer`. */
  transport(caller: Security, peer: Identity, address: string): Transport {
    return rpcTransport(address, [], { security: caller, peer });
  }

  /** A client of `service` at `address`, called as `caller`, the server proving `peer`. */
  client<S extends DescService>(service: S, caller: Security, peer: Identity, address: string): Client<S> {
    return createClient(service, this.transport(caller, peer, address));
  }

  /** Re-issue a process's certificate on disk (a rotation; the process picks it up on its own). */
  async rotate(name: ProcessName): Promise<void> {
    await this.pki.write(name, processIdentity(name));
  }
}

/** The identities that use NATS, each with its own user. */
const NATS_USERS = /^(admission|job-scheduler|job-worker|registry-adapter-[a-z]{2})$/;

/** The stack's own nats-server: a user per identity, the stream and buckets made by the provisioner. */
async function privateNatsOf(
  pki: StackPki,
  options: StackOptions,
  countries: readonly string[],
): Promise<LocalNatsServer> {
  const prefix = options.natsPrefix ?? '';
  const users = [
    'admission',
    'job-scheduler',
    'job-worker',
    ...countries.map((c) => `registry-adapter-${c}`),
  ];
  const nats = await LocalNatsServer.start({ dir: path.join(pki.dir, 'nats'), prefix, users });
  try {
    const nc = await connectNats(nats.url, NATS_PROVISIONER, nats.credentials(NATS_PROVISIONER));
    try {
      await provisionJetStream(nc, prefix, 1);
    } finally {
      await nc.close();
    }
  } catch (error) {
    await nats.stop();
    throw error;
  }
  return nats;
}

/** A unique, valid identifier for per-test resources (database name, NATS prefix). */
export function uniqueSuffix(): string {
  return `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
}
