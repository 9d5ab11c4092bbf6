#!/usr/bin/env node
// `node scripts/charts/env-check.mjs <rendered manifest.yaml>...`: each container of the image the
// charts render is started with the environment its role's config schema accepts, holds no variable
// its role does not read, and has a memory limit above its V8 heap ceiling. The same schemas the services parse at start (services/*/dist/
// config.js, `loadConfig`), so a chart value the code refuses fails here, not as a crash-looping pod:
// found by a review (2026-12-03), the adapters' DNC_ADVERTISE_ADDR rendered without a scheme and every
// adapter exited at start; and the internet-facing gateway was given database, Redis and NATS URLs
// (with their passwords) it never reads.
//
// Secret values are not in a rendering: a secretKeyRef gets a well-formed placeholder of its variable
// (a variable without one fails: add it below). Run after `npm run build`; scripts/charts/check.sh runs it.
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';

const dist = (service) => new URL(`../../services/${service}/dist/config.js`, import.meta.url).href;

/** The image's roles (scripts/run.js) and the schema each one parses, with what run.js sets first. */
const PG = 'DATABASE_URL';
const ROLES = {
  gateway: { module: dist('gateway'), schema: 'gatewayConfig', stores: [] },
  admission: { module: dist('admission'), schema: 'admissionConfig', stores: [PG, 'REDIS_URL', 'NATS_URL'] },
  quota: { module: dist('quota'), schema: 'quotaConfig', stores: [PG] },
  'job-scheduler': {
    module: dist('job-scheduler'),
    schema: 'jobsConfig',
    env: { DNC_ROLE: 'api' },
    stores: [PG, 'NATS_URL'],
  },
  'job-worker': {
    module: dist('job-scheduler'),
    schema: 'jobsConfig',
    env: { DNC_ROLE: 'worker' },
    stores: [PG, 'NATS_URL'],
  },
  'registry-adapter': { module: dist('registry-adapter'), schema: 'adapterConfig', stores: [PG, 'NATS_URL'] },
  dashboard: { module: dist('dashboard'), schema: 'dashboardConfig', stores: [PG, 'REDIS_URL'] },
  migrate: { names: migrateNames },
};

/** Read by every role outside its schema: the Node runtime. */
const RUNTIME = new Set(['NODE_OPTIONS']);

const key32 = Buffer.alloc(32, 7).toString('base64');
/** Well-formed stand-ins for the values a rendering takes from Secrets. */
const PLACEHOLDERS = {
  DATABASE_URL: 'postgres://dnc:placeholder@postgres.dnc.svc:5432/dnc',
  REDIS_URL: 'rediss://:placeholder@redis.dnc.svc:6379',
  NATS_URL: 'tls://nats.nats.svc:4222',
  DNC_NATS_PASSWORD: 'placeholder',
  DNC_FINGERPRINT_SECRET: 'placeholder-placeholder-placeholder',
  DNC_IDEMPOTENCY_KEY_SECRET: 'placeholder-placeholder-placeholder',
  DNC_KEKS: (env) => `${env.DNC_KEK_ACTIVE_ID ?? 'k1'}:${key32}`,
  DNC_TOTP_KEYS: (env) => `${env.DNC_TOTP_KEY_ACTIVE_ID ?? 't1'}:${key32}`,
};

/**
 * What a Node process needs beside its old space (--max-old-space-size): the young generation (3 x 16 MiB
 * semi-spaces), code, stacks and the Buffers of bodies and streams. A container whose memory limit
 * leaves less is killed by the kernel before V8 collects harder.
 */
const NON_HEAP_MIB = 128;
const UNITS = {
  Ki: 1 / 1024,
  Mi: 1,
  Gi: 1024,
  Ti: 1024 * 1024,
  k: 1e3 / 2 ** 20,
  M: 1e6 / 2 ** 20,
  G: 1e9 / 2 ** 20,
};

/** A Kubernetes memory quantity in MiB (undefined when absent or not understood). */
function mebibytes(quantity) {
  const m = /^([0-9.]+)([KMGT]i|[kMG])?$/.exec(String(quantity ?? ''));
  return m ? Number(m[1]) * (m[2] ? UNITS[m[2]] : 1 / 2 ** 20) : undefined;
}

/** The heap ceiling fits under the container's memory limit with room for what is not heap. */
function memoryProblems(container, env) {
  const heap = /--max-old-space-size=(\d+)/.exec(env.NODE_OPTIONS ?? '')?.[1];
  const limit = mebibytes(container.resources?.limits?.memory);
  if (!heap) return ['NODE_OPTIONS: no --max-old-space-size (the heap would follow the node, not the limit)'];
  if (limit === undefined) return ['resources.limits.memory: none (the heap ceiling needs one above it)'];
  return limit >= Number(heap) + NON_HEAP_MIB
    ? []
    : [
        `resources.limits.memory ${limit} MiB: below the heap ceiling ${heap} MiB + ${NON_HEAP_MIB} MiB not heap`,
      ];
}

/** scripts/migrate.js has no schema: the variables it reads, and what it needs. */
function migrateNames(env) {
  const problems = [];
  if (!env.DATABASE_URL) problems.push('DATABASE_URL: required');
  if (!env.COUNTRY) {
    if (!env.NATS_URL) problems.push('NATS_URL: required (the JetStream stream and buckets are made here)');
    if (env.DNC_NATS_USER !== 'provisioner') problems.push('DNC_NATS_USER: must be provisioner');
  }
  const reads = ['DATABASE_URL', 'COUNTRY', 'NATS_URL', 'DNC_NATS_USER', 'DNC_NATS_PASSWORD'];
  reads.push('DNC_JETSTREAM_REPLICAS', 'DNC_NATS_PREFIX');
  return { problems, known: new Set(reads) };
}

function containersOf(doc) {
  const spec = doc?.spec?.template?.spec ?? doc?.spec?.jobTemplate?.spec?.template?.spec ?? doc?.spec;
  return [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])];
}

/** A container's environment as its process would see it (Secrets as placeholders). */
function environment(container) {
  const env = {};
  const unresolved = [];
  const later = [];
  for (const e of container.env ?? []) {
    if (e.value !== undefined) env[e.name] = String(e.value);
    else if (e.valueFrom?.secretKeyRef) {
      const p = PLACEHOLDERS[e.name];
      if (p === undefined) unresolved.push(`${e.name}: from a Secret, no placeholder in env-check.mjs`);
      else if (typeof p === 'function') later.push([e.name, p]);
      else env[e.name] = p;
    } else if (e.valueFrom?.fieldRef || e.valueFrom?.resourceFieldRef) env[e.name] = '1';
    else unresolved.push(`${e.name}: a source env-check.mjs does not read`);
  }
  for (const [name, p] of later) env[name] = p(env);
  if (container.envFrom?.length) unresolved.push('envFrom: not checked (name each variable instead)');
  return { env, unresolved };
}

/** The names a zod object schema reads (through refinements and pipes). */
function schemaNames(schema) {
  let s = schema;
  for (let i = 0; i < 5 && !s.shape; i++) s = s.def?.in ?? s.def?.schema ?? s._def?.schema;
  if (!s?.shape) throw new Error('not a zod object schema');
  return new Set(Object.keys(s.shape));
}

const modules = new Map();
async function check(role, env) {
  const r = ROLES[role];
  if (r.names) return r.names(env);
  // The schemas default each store's URL to this machine's: a role the chart gives no URL still parses.
  const missing = r.stores
    .filter((name) => env[name] === undefined)
    .map((n) => `${n}: not set (${role} uses it)`);
  if (!modules.has(r.module)) modules.set(r.module, await import(r.module));
  const schema = modules.get(r.module)[r.schema];
  const parsed = schema.safeParse({ ...env, ...r.env });
  const problems = parsed.success
    ? []
    : parsed.error.issues.map((i) => `${i.path.join('.') || '(environment)'}: ${i.message}`);
  return { problems: [...missing, ...problems], known: schemaNames(schema) };
}

const files = process.argv.slice(2);
if (files.length === 0) {
  process.stderr.write('usage: node scripts/charts/env-check.mjs <manifest.yaml>...\n');
  process.exit(2);
}
let failures = 0;
let checked = 0;
for (const file of files) {
  for (const d of parseAllDocuments(readFileSync(file, 'utf8'))) {
    const doc = d.toJS();
    for (const container of containersOf(doc)) {
      const role = container.args?.[0];
      if (!(role in ROLES) || container.command) continue; // test pods run their own scripts
      checked++;
      const { env, unresolved } = environment(container);
      const { problems, known } = await check(role, env);
      const unread = Object.keys(env).filter((n) => !known.has(n) && !RUNTIME.has(n));
      const all = [
        ...unresolved,
        ...problems,
        ...unread.map((n) => `${n}: set, but ${role} does not read it`),
        ...memoryProblems(container, env),
      ];
      if (all.length === 0) continue;
      failures++;
      process.stdout.write(`${file}: ${doc.kind}/${doc.metadata?.name} (${role})\n`);
      for (const p of all) process.stdout.write(`   ${p}\n`); // names and schema messages, never values
    }
  }
}
process.stdout.write(`${checked} containers checked, ${failures} with problems\n`);
process.exit(failures === 0 && checked > 0 ? 0 : 1);
