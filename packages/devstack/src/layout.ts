import { LIVE_COUNTRIES } from '@dnc/api-contract/limits';
import { ephemeralPortRange, freePort } from './ports.js';

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
  | `${'gateway' | 'admission' | 'job-scheduler' | 'job-worker'}#${number}`
  | 'dashboard'
  | `adapter-${string}`;

/** How many processes of each replicated role (default 1 each): the chaos suite runs several. */
export interface Replicas {
  gateway?: number;
  admission?: number;
  /** API processes of the scheduler: only the first is called; the others sweep beside it. */
  'job-scheduler'?: number;
  'job-worker'?: number;
  /** Adapters per country. */
  adapter?: number;
}

export interface StackOptions {
  /** Repository root (where scripts/run.js lives). */
  root: string;
  databaseUrl: string;
  redisUrl: string;
  natsUrl: string;
  /** Isolates NATS stream, subjects and buckets of this stack. */
  natsPrefix?: string;
  countries?: readonly string[];
  /**
   * Fixed ports for the local stack (`LOCAL_STACK_BASE_PORT`: below the kernel's ephemeral range, warned
   * about when not); tests leave it out and get free ports.
   */
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
  /** Every job-scheduler API replica's own JobsService address (`jobs` is the first's). */
  schedulers: string[];
  /** Every adapter replica's own address, by country. */
  adapterReplicas: Record<string, string[]>;
  /** Every adapter replica's own admin listener (its registry loads), by country. */
  adapterReplicaAdmins: Record<string, string[]>;
}

/** One process of the layout: its role (`scripts/run.js <role>`) and its own environment. */
export interface ProcessLayout {
  name: ProcessName;
  role: string;
  env: Record<string, string>;
}

/**
 * Where every process of a stack listens and the environment that wires it to the others, before any
 * certificate or process exists: the environment common to all and each process's own.
 */
export interface StackLayout {
  countries: readonly string[];
  addresses: StackAddresses;
  commonEnv: Record<string, string>;
  processes: ProcessLayout[];
}

/**
 * Admission's DNC_IDEMPOTENCY_KEY_SECRET in a local stack unless the environment gives one: tests that
 * look up an idempotency record by its key (chaos, invariants) compute its MAC with it.
 */
export const DEV_IDEMPOTENCY_KEY_SECRET = 'local-development-idempotency-key-secret';

const replicaNames = <T extends string>(name: T, count = 1): ProcessName[] =>
  Array.from({ length: Math.max(1, count) }, (_, i) => (i === 0 ? name : `${name}#${i + 1}`) as ProcessName);

const url = (p: number) => `http://127.0.0.1:${p}`;

const roleOf = (name: ProcessName): string => {
  const base = name.split('#')[0]!;
  return base.startsWith('adapter-') ? 'registry-adapter' : base;
};

/** The processes of a stack by role, replicas included, in the order they are laid out. */
function processNames(countries: readonly string[], r: Replicas) {
  const gateways = replicaNames('gateway', r.gateway);
  const admissions = replicaNames('admission', r.admission);
  const adapters = countries.flatMap((c) => replicaNames(`adapter-${c}`, r.adapter));
  const schedulers = replicaNames('job-scheduler', r['job-scheduler']);
  const workers = replicaNames('job-worker', r['job-worker']);
  const all: ProcessName[] = [
    ...gateways,
    ...admissions,
    'quota',
    ...schedulers,
    ...workers,
    'dashboard',
    ...adapters,
  ];
  return { gateways, admissions, adapters, schedulers, workers, all };
}

type Names = ReturnType<typeof processNames>;

/** A fixed block of ports that overlaps the kernel's ephemeral range: said once, as a warning. */
function warnIfEphemeral(first: number, last: number): void {
  const kernel = ephemeralPortRange();
  if (first > kernel.to || last < kernel.from) return;
  process.emitWarning(
    `ports ${first}-${last} of the stack overlap the kernel's ephemeral range ` +
      `(${kernel.from}-${kernel.to}): a client socket can take one before its process binds it ` +
      '(listen EADDRINUSE); choose a base port below the range',
  );
}

/**
 * Every port of the stack, taken in one fixed order: with a `basePort` the local stack gets the same
 * ports on every start (the README's example request names the gateway's).
 */
async function allocatePorts(options: StackOptions, countries: readonly string[], names: Names) {
  let next = options.basePort;
  const port = async () => (next === undefined ? freePort() : next++);
  const gateway = options.gatewayPort ?? (await port());
  const grpc = { admission: await port(), quota: await port(), jobs: await port(), dashboard: await port() };
  const dashboard = options.dashboardPort ?? (await port());
  const adapters: Record<string, number> = {};
  for (const c of countries) adapters[c] = await port();
  const metrics: Record<string, number> = {};
  for (const n of names.all) metrics[n] = await port();
  const workerGrpc = await port();
  // The first replica of each role takes the ports above; the others get their own.
  const own: Partial<Record<ProcessName, number>> = { gateway, admission: grpc.admission };
  for (const c of countries) own[`adapter-${c}`] = adapters[c]!;
  for (const n of names.all) if (n.includes('#')) own[n] = await port();
  // The admin listener of each process that has one (operator only, audited).
  const admin: Partial<Record<ProcessName, number>> = {};
  for (const n of names.all)
    if (/^(admission|quota|job-scheduler|dashboard|adapter-)/.test(n)) admin[n] = await port();
  // The plaintext health listener of every process but the gateway (which answers /v1/ready).
  const health: Partial<Record<ProcessName, number>> = {};
  for (const n of names.all) if (roleOf(n) !== 'gateway') health[n] = await port();
  if (options.basePort !== undefined && next !== undefined) warnIfEphemeral(options.basePort, next - 1);
  return { gateway, grpc, dashboard, adapters, metrics, workerGrpc, own, admin, health };
}

type Ports = Awaited<ReturnType<typeof allocatePorts>>;

function addressesOf(options: StackOptions, countries: readonly string[], ports: Ports, r: Replicas) {
  const { grpc, admin, own } = ports;
  return {
    gateway: options.publicBaseUrl ?? url(ports.gateway),
    admission: url(grpc.admission),
    quota: url(grpc.quota),
    jobs: url(grpc.jobs),
    dashboard: url(ports.dashboard),
    dashboardAdmin: url(admin.dashboard!),
    admissionAdmin: url(admin.admission!),
    quotaAdmin: url(admin.quota!),
    jobsAdmin: url(admin['job-scheduler']!),
    adapterAdmins: Object.fromEntries(countries.map((c) => [c, url(admin[`adapter-${c}`]!)])),
    adapters: Object.fromEntries(countries.map((c) => [c, url(ports.adapters[c]!)])),
    metrics: ports.metrics,
    gateways: replicaNames('gateway', r.gateway).map((n) => url(own[n]!)),
    schedulers: replicaNames('job-scheduler', r['job-scheduler']).map((n) => url(own[n] ?? grpc.jobs)),
    adapterReplicas: Object.fromEntries(
      countries.map((c) => [c, replicaNames(`adapter-${c}`, r.adapter).map((n) => url(own[n]!))]),
    ),
    adapterReplicaAdmins: Object.fromEntries(
      countries.map((c) => [c, replicaNames(`adapter-${c}`, r.adapter).map((n) => url(admin[n]!))]),
    ),
  } satisfies StackAddresses;
}

/** The environment of every process: where the shared servers and the other services are, the keys. */
function commonEnvOf(options: StackOptions, addresses: StackAddresses, ports: Ports): Record<string, string> {
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
    DNC_GATEWAY_PORT: String(ports.gateway),
    DNC_FINGERPRINT_SECRET: options.env?.['DNC_FINGERPRINT_SECRET'] ?? 'local-development-fingerprint-secret',
    DNC_IDEMPOTENCY_KEY_SECRET: options.env?.['DNC_IDEMPOTENCY_KEY_SECRET'] ?? DEV_IDEMPOTENCY_KEY_SECRET,
    DNC_KEKS: options.env?.['DNC_KEKS'] ?? `local1:${Buffer.alloc(32, 7).toString('base64')}`,
    DNC_KEK_ACTIVE_ID: options.env?.['DNC_KEK_ACTIVE_ID'] ?? 'local1',
    DNC_ENABLE_DRILLS: '1',
    DNC_LOG_LEVEL: 'info',
    ...options.env,
  };
  if (options.insecurePlaintext) commonEnv['DNC_INSECURE_PLAINTEXT'] = '1';
  return commonEnv;
}

/** Each role's own listeners and peers (replicas included). */
function roleEnvOf(options: StackOptions, addresses: StackAddresses, names: Names, ports: Ports) {
  const { own, grpc } = ports;
  const roleEnv: Partial<Record<ProcessName, Record<string, string>>> = {
    quota: { DNC_GRPC_PORT: String(grpc.quota) },
    dashboard: {
      DNC_GRPC_PORT: String(grpc.dashboard),
      DNC_DASHBOARD_PORT: String(ports.dashboard),
      DNC_DASHBOARD_PUBLIC_URL: addresses.dashboard,
      // A fixed development key, as for DNC_KEKS (the demo database outlives a stack); only the dashboard has it.
      DNC_TOTP_KEYS: options.env?.['DNC_TOTP_KEYS'] ?? `local1:${Buffer.alloc(32, 11).toString('base64')}`,
      DNC_TOTP_KEY_ACTIVE_ID: options.env?.['DNC_TOTP_KEY_ACTIVE_ID'] ?? 'local1',
    },
  };
  // Gateway replica i talks to admission replica i (round-robin when there are fewer).
  names.gateways.forEach((n, i) => {
    roleEnv[n] = {
      DNC_GATEWAY_PORT: String(own[n]),
      DNC_ADMISSION_ADDR: url(own[names.admissions[i % names.admissions.length]!]!),
    };
  });
  for (const n of names.admissions) roleEnv[n] = { DNC_GRPC_PORT: String(own[n]) };
  for (const n of names.schedulers) roleEnv[n] = { DNC_GRPC_PORT: String(own[n] ?? grpc.jobs) };
  for (const n of names.workers) roleEnv[n] = { DNC_GRPC_PORT: String(own[n] ?? ports.workerGrpc) };
  for (const n of names.adapters) {
    roleEnv[n] = {
      COUNTRY: n.slice('adapter-'.length).split('#')[0]!,
      DNC_GRPC_PORT: String(own[n]),
      DNC_ADVERTISE_ADDR: url(own[n]!),
      DNC_ADVERTISE_ADMIN_ADDR: url(ports.admin[n]!),
    };
  }
  return roleEnv;
}

/** Lay out a stack: its ports, the addresses callers use, and every process's environment. */
export async function layOutStack(options: StackOptions): Promise<StackLayout> {
  const countries = options.countries ?? LIVE_COUNTRIES;
  const r = options.replicas ?? {};
  const names = processNames(countries, r);
  const ports = await allocatePorts(options, countries, names);
  const addresses = addressesOf(options, countries, ports, r);
  const roleEnv = roleEnvOf(options, addresses, names, ports);
  const processes = names.all.map((name) => {
    const role = roleOf(name);
    const env: Record<string, string> = {
      ...roleEnv[name],
      DNC_METRICS_PORT: String(ports.metrics[name]),
      ...(role === 'gateway' ? {} : { DNC_HEALTH_PORT: String(ports.health[name]) }),
      ...(ports.admin[name] ? { DNC_ADMIN_PORT: String(ports.admin[name]) } : {}),
    };
    return { name, role, env };
  });
  return { countries, addresses, commonEnv: commonEnvOf(options, addresses, ports), processes };
}
