// The stack under test: every service as its own process on a fresh database, NATS prefix and Redis
// prefix; seeded like the e2e tests; removed again at the end, also on failure or Ctrl-C. And the
// per-phase accounting: CPU seconds per process, PostgreSQL counters, RPCs served, RSS samples.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { dropDatabase, dropNatsPrefix, Stack, uniqueSuffix } from '@dnc/devstack';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import Redis from 'ioredis';
import { args, DATABASE, log, NATS, REDIS, ROOT, sleep } from './config.mjs';
import { RssSampler } from './memory.mjs';
import { now, round, sig } from './stats.mjs';
import { cpuDelta, cpuSnapshot, pgCounters, pgDelta, wakeSnapshot } from './system.mjs';
import { COUNTRY } from './workload.mjs';

async function natsStreams(prefix) {
  const nc = await connect({ servers: NATS });
  try {
    const jsm = await jetstreamManager(nc);
    const out = {};
    for await (const info of jsm.streams.list()) {
      const name = info.config.name;
      if (name.startsWith(prefix) || name.startsWith(`KV_${prefix}`))
        out[name] = { messages: info.state.messages, bytes: info.state.bytes };
    }
    return out;
  } finally {
    await nc.close();
  }
}

async function dropRedisPrefix(prefix) {
  const redis = new Redis(REDIS, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/**
 * A bench stack: `ctx` carries what every phase needs; `cleanup()` stops every process and removes
 * the database, the NATS streams and buckets and the Redis keys of the prefix.
 */
/** `options`: extra Stack options (the TLS-cost run: `{ insecurePlaintext: true }`). */
export async function createBenchStack(options = {}) {
  const suffix = uniqueSuffix();
  const dbUrl = new URL(DATABASE);
  dbUrl.pathname = `/dnc_bench_${suffix}`;
  const databaseUrl = dbUrl.toString();
  const natsPrefix = `B${suffix}_`;
  const work = mkdtempSync(path.join(tmpdir(), 'dnc-bench-'));
  const logDir = path.join(work, 'logs');
  const stack = await Stack.create({
    root: ROOT,
    databaseUrl,
    redisUrl: REDIS,
    natsUrl: NATS,
    natsPrefix,
    countries: [COUNTRY],
    logDir,
    ...options,
    // `options.env`: settings of this stack's services (ab.mjs --base-env), beside its own prefix.
    env: { ...options.env, DNC_REDIS_PREFIX: natsPrefix },
  });
  let stopping = false;
  const ctx = {
    stack,
    databaseUrl,
    natsPrefix,
    work,
    registryFile: path.join(work, `${COUNTRY}.txt`),
    run: suffix,
    phases: {},
    idle: {},
    apiKey: '',
    failed: false,
    streams: () => natsStreams(natsPrefix),
    async cleanup() {
      if (stopping) return;
      stopping = true;
      await stack.close().catch(() => {});
      await dropDatabase(databaseUrl).catch((e) => log(`could not drop the bench database: ${e.message}`));
      await dropNatsPrefix(NATS, natsPrefix).catch((e) =>
        log(`could not remove the NATS prefix: ${e.message}`),
      );
      await dropRedisPrefix(natsPrefix).catch((e) => log(`could not remove the Redis keys: ${e.message}`));
      if (ctx.failed || args['keep-logs']) {
        rmSync(ctx.registryFile, { force: true });
        log(`service logs kept in ${logDir}`);
      } else rmSync(work, { recursive: true, force: true });
    },
  };
  return ctx;
}

/** An organization, an API key, a paid purchase, the highest rate limit and a quota it cannot exhaust. */
export async function seed(stack) {
  const org = await stack.admin(['org', 'create', '--name', 'Bench Organization']);
  const key = await stack.admin(['key', 'create', '--org', org.org_id]);
  const purchase = await stack.admin(['purchase', 'create', '--org', org.org_id, '--country', COUNTRY]);
  await stack.admin(['purchase', 'pay', '--purchase', purchase.purchase_id]);
  if (COUNTRY !== 'co') await stack.admin(['purchase', 'activate', '--purchase', purchase.purchase_id]);
  await stack.admin(['org', 'set-rate-limit', '--org', org.org_id, '--limit', '60000']);
  await stack.admin(['quota', 'set', '--org', org.org_id, '--country', COUNTRY, '--limit', '1000000000000']);
  return { orgId: org.org_id, apiKey: key.api_key, keyId: key.key_id };
}

export async function waitCountryServing(stack, timeoutMs = 60_000) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const list = await stack.admin(['country', 'list']);
    if (list.countries.find((c) => c.country === COUNTRY)?.adapter_serving) return;
    await sleep(200);
  }
  throw new Error(`country ${COUNTRY} not serving in discovery after ${timeoutMs} ms`);
}

export async function metricsText(stack, name) {
  const port = stack.addresses.metrics[name];
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  return res.text();
}

/** Sum and count of a histogram (all label sets whose labels contain `match`). */
export function histogram(text, name, match = '') {
  let sum = 0;
  let count = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}_sum`) && line.includes(match)) sum += Number(line.split(' ').at(-1));
    if (line.startsWith(`${name}_count`) && line.includes(match)) count += Number(line.split(' ').at(-1));
  }
  return { sum, count };
}

/** RPCs served so far by every process of the stack, by method (dnc_rpc_duration_seconds; health checks excluded). */
async function rpcsServed(stack) {
  const out = {};
  for (const name of stack.processes.keys()) {
    if (name === 'gateway') continue;
    const text = await metricsText(stack, name).catch(() => '');
    for (const line of text.split('\n')) {
      if (!line.startsWith('dnc_rpc_duration_seconds_count') || line.includes('grpc.health')) continue;
      const method = /method="([^"]+)"/.exec(line)?.[1] ?? 'unknown';
      out[method] = (out[method] ?? 0) + Number(line.split(' ').at(-1));
    }
  }
  return out;
}

function rpcDelta(before, after) {
  return Object.fromEntries(
    Object.entries(after)
      .map(([k, v]) => [k, v - (before[k] ?? 0)])
      .filter(([, v]) => v > 0),
  );
}

const total = (counts) => Object.values(counts).reduce((a, b) => a + b, 0);

/**
 * What the stack does on its own while idle (timers, discovery, sweepers, readiness probes), per
 * second: CPU seconds and event-loop wake-ups of each process, PostgreSQL commits of the bench
 * database and RPCs served. Phases report their per-unit costs net of it.
 */
export async function idleBaseline(ctx, seconds) {
  const cpu0 = cpuSnapshot(ctx.stack);
  const wakes0 = wakeSnapshot(ctx.stack);
  const pg0 = await pgCounters(ctx.databaseUrl);
  const rpc0 = await rpcsServed(ctx.stack);
  await sleep(seconds * 1000);
  const d = cpuDelta(cpu0, cpuSnapshot(ctx.stack));
  const wakes = cpuDelta(wakes0, wakeSnapshot(ctx.stack));
  const rpcs = total(rpcDelta(rpc0, await rpcsServed(ctx.stack)));
  await sleep(1_200);
  const pg = pgDelta(pg0, await pgCounters(ctx.databaseUrl));
  return {
    cpu: Object.fromEntries(Object.entries(d).map(([k, v]) => [k, round(v / seconds, 4)])),
    wakes: Object.fromEntries(Object.entries(wakes).map(([k, v]) => [k, round(v / seconds, 2)])),
    commits: round(pg.commits / (seconds + 1.2), 2),
    rpcs: round(rpcs / seconds, 2),
  };
}

/**
 * A phase: CPU seconds per process, the bench database's write counters, the RPCs the services
 * served (by method) and the RSS of every process (sampled) around `fn`. `units(result)` names the
 * work done (requests, numbers) so the phase also reports CPU milliseconds, commits and internal
 * calls per unit, net of the idle baseline of the stack.
 */
export async function phase(ctx, label, fn, units) {
  log(`${label}...`);
  const cpu0 = cpuSnapshot(ctx.stack);
  const wakes0 = wakeSnapshot(ctx.stack);
  const pg0 = await pgCounters(ctx.databaseUrl);
  const rpc0 = await rpcsServed(ctx.stack);
  const rss = new RssSampler(ctx.stack);
  const t0 = now();
  let result;
  try {
    result = await fn();
  } finally {
    rss.stop();
  }
  const wall = now() - t0;
  const cpu1 = cpuSnapshot(ctx.stack);
  const wakes = cpuDelta(wakes0, wakeSnapshot(ctx.stack));
  const rpcs = rpcDelta(rpc0, await rpcsServed(ctx.stack));
  await sleep(1_200); // statistics of idle backends are flushed within a second
  const pg1 = await pgCounters(ctx.databaseUrl);
  const cpu = cpuDelta(cpu0, cpu1);
  const entry = {
    wall_s: round(wall / 1000, 3),
    cpu_s: cpu,
    postgres: pgDelta(pg0, pg1),
    rpcs_served: rpcs,
    rss_mib: rss.summary(),
  };
  const u = units?.(result);
  if (u) {
    const seconds = wall / 1000;
    const idle = (k) => (ctx.stack.processes.has(k) ? (ctx.idle.cpu?.[k] ?? 0) * seconds : 0);
    entry.units = u;
    entry.cpu_ms_per_unit = Object.fromEntries(
      Object.entries(cpu).map(([k, v]) => [k, sig((Math.max(0, v - idle(k)) * 1000) / u.count)]),
    );
    const p = entry.postgres;
    const idleCommits = (ctx.idle.commits ?? 0) * (seconds + 1.2);
    entry.postgres_per_unit = {
      commits: round(Math.max(0, p.commits - idleCommits) / u.count, 3),
      wal_syncs_server_wide: round(p.wal_syncs_server_wide / u.count, 3),
      rows_written: round((p.rows_inserted + p.rows_updated + p.rows_deleted) / u.count, 3),
    };
    entry.rpcs_per_unit = round(Math.max(0, total(rpcs) - (ctx.idle.rpcs ?? 0) * seconds) / u.count, 3);
    entry.wakes_per_unit = Object.fromEntries(
      Object.entries(wakes).map(([k, v]) => [
        k,
        sig(Math.max(0, v - (ctx.idle.wakes?.[k] ?? 0) * seconds) / u.count),
      ]),
    );
  }
  ctx.phases[label] = entry;
  return result;
}

export function scrubRequest(ctx, urlPath, bodyText, idempotencyKey) {
  return fetch(`${ctx.stack.baseUrl}${urlPath}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${ctx.apiKey}`,
      'content-type': 'application/json',
      'idempotency-key': idempotencyKey,
    },
    body: bodyText,
  });
}

export function expectSummary(label, summary, expected, total) {
  if (
    summary?.total_checked !== total ||
    summary.prohibited_numbers !== expected.prohibited ||
    summary.safe_numbers !== expected.safe ||
    summary.invalid_numbers !== expected.invalid
  )
    throw new Error(
      `${label}: wrong summary ${JSON.stringify(summary)}, expected ${JSON.stringify(expected)}`,
    );
}
