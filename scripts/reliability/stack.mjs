// The stack the fuzz and chaos suites drive: every service as its own process (packages/devstack),
// its own database and NATS/Redis prefix, seeded through dnc-admin's commands run in this process
// (one spawn per command would cost minutes for a hundred organizations).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { adminEnv, commands } from '@dnc/admin-cli';
import { dropDatabase, dropNatsPrefix, LIVE_COUNTRIES, Stack, uniqueSuffix } from '@dnc/devstack';

export const ROOT = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const SHARED = {
  databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  natsUrl: process.env.NATS_URL ?? 'nats://127.0.0.1:4222',
};

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const log = (suite, line) => process.stderr.write(`${suite}: ${line}\n`);

/** `servers`: the URLs of PostgreSQL, Redis and NATS (the shared ones unless a suite brings its own). */
/** `beforeUp(stack)`: wiring that needs the stack's ports before its processes start (proxies; awaited). */
export async function startStack({
  label,
  servers = SHARED,
  countries = LIVE_COUNTRIES,
  beforeUp,
  ...options
}) {
  const suffix = uniqueSuffix();
  const db = new URL(servers.databaseUrl);
  db.pathname = `/dnc_${label}_${suffix}`;
  const databaseUrl = db.toString();
  const natsPrefix = `${label.toUpperCase()}${suffix}_`;
  const stack = await Stack.create({
    root: ROOT,
    redisUrl: servers.redisUrl,
    natsUrl: servers.natsUrl,
    databaseUrl,
    natsPrefix,
    countries,
    logDir: path.join(ROOT, `.${label}/logs-${suffix}`),
    ...options,
    env: { DNC_REDIS_PREFIX: natsPrefix, ...options.env },
  });
  const teardown = async () => {
    await stack.close();
    await dropDatabase(databaseUrl).catch(() => {});
    await dropNatsPrefix(servers.natsUrl, natsPrefix).catch(() => {});
  };
  try {
    await beforeUp?.(stack);
    await stack.up();
  } catch (error) {
    await teardown();
    throw error;
  }
  return { stack, databaseUrl, natsPrefix, teardown };
}

/** One dnc-admin command, in process: `admin(stack, 'org create', { name: 'x' })`. */
export async function admin(stack, name, flags = {}) {
  const command = commands.find((c) => c.name === name);
  if (!command) throw new Error(`no dnc-admin command ${name}`);
  const strings = Object.fromEntries(
    Object.entries(flags).map(([k, v]) => [k, typeof v === 'boolean' ? v : String(v)]),
  );
  return command.run(strings, adminEnv(stack.adminEnv()), []);
}

/** Run `fn` over `items` with at most `limit` at once. */
export async function pool(items, limit, fn) {
  const out = new Array(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  });
  await Promise.all(lanes);
  return out;
}

/** An organization with a key and active purchases, its quota and rate limit set as asked. */
export async function seedOrg(stack, { name, countries = ['co'], quota, rateLimit }) {
  const org = await admin(stack, 'org create', { name });
  const key = await admin(stack, 'key create', { org: org.org_id });
  for (const country of countries) {
    const p = await admin(stack, 'purchase create', {
      org: org.org_id,
      country,
      ...(quota ? { quota } : {}),
    });
    await admin(stack, 'purchase pay', { purchase: p.purchase_id });
    if (country !== 'co') await admin(stack, 'purchase activate', { purchase: p.purchase_id });
  }
  if (rateLimit) await admin(stack, 'org set-rate-limit', { org: org.org_id, limit: rateLimit });
  return { orgId: org.org_id, apiKey: key.api_key, keyId: key.key_id, countries };
}

export function seedOrgs(stack, count, options) {
  return pool(
    Array.from({ length: count }, (_, i) => i),
    8,
    (i) => seedOrg(stack, { ...options, name: `${options.name ?? 'Suite'} ${i + 1}` }),
  );
}

/** Load a registry file for each country and wait until admission sees every one serving. */
export async function loadRegistries(stack, files) {
  for (const [country, file] of Object.entries(files)) {
    // A fixture: the registry is this file now, whatever was loaded before.
    await admin(stack, 'registry load', { country, file, mode: 'replace', 'allow-older': true });
  }
  const until = Date.now() + 30_000;
  while (Date.now() < until) {
    const list = await admin(stack, 'country list');
    const serving = new Set(list.countries.filter((c) => c.adapter_serving).map((c) => c.country));
    if (Object.keys(files).every((c) => serving.has(c))) return;
    await sleep(200);
  }
  throw new Error('a country is not serving in discovery after 30 s');
}

export const sampleRegistry = (country) => path.join(ROOT, 'scripts/stack/sample-registry', `${country}.txt`);

/** Quota figures of one organization and country, as an operator reads them. */
export async function quotaOf(stack, orgId, country) {
  const q = await admin(stack, 'quota show', { org: orgId });
  const a = q.accounts.find((x) => x.country === country);
  return { used: Number(a?.used ?? 0), reserved: Number(a?.reserved ?? 0) };
}
