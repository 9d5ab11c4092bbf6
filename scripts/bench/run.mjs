#!/usr/bin/env node
// `npm run bench [-- --smoke]`: every service as its own process against the real PostgreSQL, Redis
// and NATS, a synthetic registry of 10,000,000 numbers, and each figure printed beside its floor
// (scripts/bench/floor.mjs: the same work in one process without the service).
//
// Options: --smoke (tiny registry, few runs, ~1-2 min: what CI runs), --size N (registry), --runs N,
// --duration S (autocannon), --connections N, --job N, --small-job N, --out FILE, --keep-logs.
// Writes bench-results.json (every figure, git commit, environment). Never asserts: machines are
// noisy; the targets are printed beside the figures. Exit code is non-zero only when the bench could
// not run (or a response was wrong).
import { spawn } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { fromBinary } from '@bufbuild/protobuf';
import { createClient } from '@connectrpc/connect';
import { dropDatabase, dropNatsPrefix, Stack, uniqueSuffix } from '@dnc/devstack';
import { checkRequest, rpcTransport } from '@dnc/kit';
import { admissionv1, jobsv1, quotav1, registryv1 } from '@dnc/proto';
import grpc from '@grpc/grpc-js';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import autocannon from 'autocannon';
import Redis from 'ioredis';
import pg from 'pg';
import { now, round, sig, summarize, timeRuns } from './stats.mjs';
import { cpuDelta, cpuSnapshot, environment, pgCounters, pgDelta, rssMiB } from './system.mjs';
import { printReport } from './table.mjs';
import { body, COUNTRY, inputs, writeRegistryFile } from './workload.mjs';

const ROOT = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));
const { values: args } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    size: { type: 'string' },
    runs: { type: 'string' },
    duration: { type: 'string' },
    connections: { type: 'string' },
    job: { type: 'string' },
    'small-job': { type: 'string' },
    out: { type: 'string', default: path.join(ROOT, 'bench-results.json') },
    'keep-logs': { type: 'boolean', default: false },
  },
});
const smoke = args.smoke;
const CONFIG = {
  mode: smoke ? 'smoke' : 'full',
  country: COUNTRY,
  registry_size: Number(args.size ?? (smoke ? 10_000 : 10_000_000)),
  v1_batch: 10_000,
  v1_runs: Number(args.runs ?? (smoke ? 5 : 20)),
  v1_warmup: smoke ? 2 : 5,
  check_runs: smoke ? 20 : 100,
  check_warmup: smoke ? 5 : 20,
  single_duration_s: Number(args.duration ?? (smoke ? 3 : 30)),
  single_connections: Number(args.connections ?? (smoke ? 8 : 48)),
  job_size: Number(args.job ?? (smoke ? 20_000 : 500_000)),
  small_job_size: Number(args['small-job'] ?? (smoke ? 5_000 : 100_000)),
  concurrent_jobs: 4,
  poll_interval_ms: 25,
};

const DATABASE = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const NATS = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

const log = (line) => process.stderr.write(`bench: ${line}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Run the floor as its own process (one process, nothing else in it). */
function runFloorProcess() {
  const floorArgs = [
    path.join(ROOT, 'scripts/bench/floor.mjs'),
    '--size',
    String(CONFIG.registry_size),
    '--runs',
    String(CONFIG.v1_runs),
    '--job',
    String(CONFIG.job_size),
    '--small-job',
    String(CONFIG.small_job_size),
  ];
  if (smoke) floorArgs.push('--smoke');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, floorArgs, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
    });
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`floor exited with ${code}`));
      resolve(JSON.parse(out));
    });
  });
}

// ---- the stack -------------------------------------------------------------------------------------

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

async function seed(stack) {
  const org = await stack.admin(['org', 'create', '--name', 'Bench Organization']);
  const key = await stack.admin(['key', 'create', '--org', org.org_id]);
  const purchase = await stack.admin(['purchase', 'create', '--org', org.org_id, '--country', COUNTRY]);
  await stack.admin(['purchase', 'pay', '--purchase', purchase.purchase_id]);
  if (COUNTRY !== 'co') await stack.admin(['purchase', 'activate', '--purchase', purchase.purchase_id]);
  // The bench org sends far more than a customer: the highest rate limit and a quota it cannot exhaust.
  await stack.admin(['org', 'set-rate-limit', '--org', org.org_id, '--limit', '60000']);
  await stack.admin(['quota', 'set', '--org', org.org_id, '--country', COUNTRY, '--limit', '1000000000000']);
  return { orgId: org.org_id, apiKey: key.api_key, keyId: key.key_id };
}

async function waitCountryServing(stack, timeoutMs = 60_000) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const list = await stack.admin(['country', 'list']);
    if (list.countries.find((c) => c.country === COUNTRY)?.adapter_serving) return;
    await sleep(200);
  }
  throw new Error(`country ${COUNTRY} not serving in discovery after ${timeoutMs} ms`);
}

async function metricsText(stack, name) {
  const port = stack.addresses.metrics[name];
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  return res.text();
}

/** Sum and count of a histogram (all label sets whose labels contain `match`). */
function histogram(text, name, match = '') {
  let sum = 0;
  let count = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}_sum`) && line.includes(match)) sum += Number(line.split(' ').at(-1));
    if (line.startsWith(`${name}_count`) && line.includes(match)) count += Number(line.split(' ').at(-1));
  }
  return { sum, count };
}

// ---- measurements ----------------------------------------------------------------------------------

/** CPU seconds per second of each process while the stack is idle (timers, discovery, sweepers). */
async function idleBaseline(ctx, seconds) {
  const cpu0 = cpuSnapshot(ctx.stack);
  await sleep(seconds * 1000);
  const d = cpuDelta(cpu0, cpuSnapshot(ctx.stack));
  return Object.fromEntries(Object.entries(d).map(([k, v]) => [k, round(v / seconds, 4)]));
}

/**
 * A phase: CPU seconds per process and the bench database's write counters around `fn`. `units(result)`
 * names the work done (requests, numbers) so the phase also reports CPU milliseconds per unit, net of
 * the idle baseline of the stack's own processes.
 */
async function phase(ctx, label, fn, units) {
  log(`${label}...`);
  const cpu0 = cpuSnapshot(ctx.stack);
  const pg0 = await pgCounters(ctx.databaseUrl);
  const t0 = now();
  const result = await fn();
  const wall = now() - t0;
  const cpu1 = cpuSnapshot(ctx.stack);
  await sleep(1_200); // statistics of idle backends are flushed within a second
  const pg1 = await pgCounters(ctx.databaseUrl);
  const cpu = cpuDelta(cpu0, cpu1);
  const entry = { wall_s: round(wall / 1000, 3), cpu_s: cpu, postgres: pgDelta(pg0, pg1) };
  const u = units?.(result);
  if (u) {
    const idle = (k) => (ctx.stack.processes.has(k) ? (ctx.idle[k] ?? 0) * (wall / 1000) : 0);
    entry.units = u;
    entry.cpu_ms_per_unit = Object.fromEntries(
      Object.entries(cpu).map(([k, v]) => [k, sig((Math.max(0, v - idle(k)) * 1000) / u.count)]),
    );
    const p = entry.postgres;
    entry.postgres_per_unit = {
      commits: round(p.commits / u.count, 3),
      rows_written: round((p.rows_inserted + p.rows_updated + p.rows_deleted) / u.count, 3),
    };
  }
  ctx.phases[label] = entry;
  return result;
}

function scrubRequest(ctx, path, bodyText, idempotencyKey) {
  return fetch(`${ctx.stack.baseUrl}${path}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${ctx.apiKey}`,
      'content-type': 'application/json',
      'idempotency-key': idempotencyKey,
    },
    body: bodyText,
  });
}

function expectSummary(label, summary, expected, total) {
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

/**
 * CheckRequest bytes written directly (field 1 country, field 2 repeated phones): the same bytes as
 * protobuf-es toBinary, without its cost, so the round trip below is the adapter's share alone.
 */
function encodeCheckRequest(country, phones) {
  const parts = [Buffer.from([0x0a, Buffer.byteLength(country)]), Buffer.from(country)];
  for (const p of phones) {
    const b = Buffer.from(p, 'utf8');
    parts.push(
      Buffer.from(b.length < 128 ? [0x12, b.length] : [0x12, (b.length & 0x7f) | 0x80, b.length >> 7]),
      b,
    );
  }
  return Buffer.concat(parts);
}

/** Check with a pre-encoded request over @grpc/grpc-js: the adapter's handler, decode and transport. */
async function benchAdapterCheckRaw(ctx, phones, expected) {
  const address = new URL(ctx.stack.addresses.adapters[COUNTRY]).host;
  const client = new grpc.Client(address, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': 64 << 20,
    'grpc.max_send_message_length': 64 << 20,
  });
  const encoded = encodeCheckRequest(COUNTRY, phones);
  const call = () =>
    new Promise((resolve, reject) =>
      client.makeUnaryRequest(
        '/dnc.registry.v1.RegistryAdapterService/Check',
        (b) => b,
        (b) => fromBinary(registryv1.CheckResponseSchema, b),
        encoded,
        new grpc.Metadata(),
        { deadline: Date.now() + 10_000 },
        (e, r) => (e ? reject(e) : resolve(r)),
      ),
    );
  try {
    return await timeRuns(
      async (i) => {
        const answer = await call();
        if (i === 0) {
          const prohibited = answer.outcomes.filter((o) => o === registryv1.Outcome.PROHIBITED).length;
          if (prohibited !== expected.prohibited)
            throw new Error('adapter Check (pre-encoded): wrong answer');
        }
      },
      CONFIG.check_runs,
      CONFIG.check_warmup,
    );
  } finally {
    client.close();
  }
}

async function benchAdapterCheck(ctx) {
  const client = createClient(
    registryv1.RegistryAdapterService,
    rpcTransport(ctx.stack.addresses.adapters[COUNTRY]),
  );
  const { phones, expected } = inputs(CONFIG.v1_batch, CONFIG.registry_size, 1);
  const before = histogram(
    await metricsText(ctx.stack, `adapter-${COUNTRY}`),
    'dnc_adapter_check_duration_seconds',
  );
  const latency = await timeRuns(
    async (i) => {
      const answer = await client.check(checkRequest(COUNTRY, phones), { timeoutMs: 10_000 });
      if (i === 0) {
        const prohibited = answer.outcomes.filter((o) => o === registryv1.Outcome.PROHIBITED).length;
        const safe = answer.outcomes.filter((o) => o === registryv1.Outcome.SAFE).length;
        if (prohibited !== expected.prohibited || safe !== expected.safe)
          throw new Error(
            `adapter Check: ${prohibited} prohibited / ${safe} safe, expected ${JSON.stringify(expected)}`,
          );
      }
    },
    CONFIG.check_runs,
    CONFIG.check_warmup,
  );
  const after = histogram(
    await metricsText(ctx.stack, `adapter-${COUNTRY}`),
    'dnc_adapter_check_duration_seconds',
  );
  const raw = await benchAdapterCheckRaw(ctx, phones, expected);
  return {
    grpc_round_trip_ms: latency,
    grpc_round_trip_pre_encoded_ms: raw,
    handler_mean_ms: round(((after.sum - before.sum) / (after.count - before.count)) * 1000),
  };
}

async function benchV1Batch(ctx) {
  const { phones, expected } = inputs(CONFIG.v1_batch, CONFIG.registry_size, 1);
  const bodyText = body(phones);
  const gw0 = histogram(
    await metricsText(ctx.stack, 'gateway'),
    'dnc_http_request_duration_seconds',
    '/v1/scrub',
  );
  const ad0 = histogram(
    await metricsText(ctx.stack, `adapter-${COUNTRY}`),
    'dnc_adapter_check_duration_seconds',
  );
  let bytes = 0;
  const latency = await timeRuns(
    async (i) => {
      const res = await scrubRequest(ctx, '/v1/scrub', bodyText, `bench-v1-${ctx.run}-${i}`);
      const text = await res.text();
      if (res.status !== 200) throw new Error(`v1 10k: HTTP ${res.status} ${text.slice(0, 200)}`);
      bytes = text.length;
      if (i === 0) expectSummary('v1 10k', JSON.parse(text).summary, expected, phones.length);
    },
    CONFIG.v1_runs,
    CONFIG.v1_warmup,
  );
  const gw1 = histogram(
    await metricsText(ctx.stack, 'gateway'),
    'dnc_http_request_duration_seconds',
    '/v1/scrub',
  );
  const ad1 = histogram(
    await metricsText(ctx.stack, `adapter-${COUNTRY}`),
    'dnc_adapter_check_duration_seconds',
  );
  return {
    end_to_end_ms: latency,
    request_bytes: bodyText.length,
    response_bytes: bytes,
    gateway_server_mean_ms: round(((gw1.sum - gw0.sum) / (gw1.count - gw0.count)) * 1000),
    adapter_handler_mean_ms: round(((ad1.sum - ad0.sum) / (ad1.count - ad0.count)) * 1000),
  };
}

/** Sequential one-number requests: the fixed cost of a v1 request (HTTP, auth, admission, Complete). */
async function benchV1One(ctx) {
  const bodies = Array.from({ length: 100 }, (_, i) => body(inputs(1, CONFIG.registry_size, i + 100).phones));
  return timeRuns(
    async (i) => {
      const res = await scrubRequest(ctx, '/v1/scrub', bodies[i % 100], `bench-v1one-${ctx.run}-${i}`);
      const text = await res.text();
      if (res.status !== 200) throw new Error(`v1 single: HTTP ${res.status} ${text.slice(0, 200)}`);
    },
    smoke ? 20 : 100,
    smoke ? 5 : 20,
  );
}

/**
 * Where the fixed cost of a v1 request goes: the gateway's three admission calls and a one-number
 * Check, each alone over gRPC, sequentially (the rest of a one-number request is the gateway's HTTP).
 */
async function benchV1FixedSplit(ctx) {
  const admission = createClient(admissionv1.AdmissionService, rpcTransport(ctx.stack.addresses.admission));
  const adapter = createClient(
    registryv1.RegistryAdapterService,
    rpcTransport(ctx.stack.addresses.adapters[COUNTRY]),
  );
  const runs = smoke ? 20 : 100;
  const warmup = smoke ? 5 : 20;
  const samples = { authenticate: [], admit: [], check_one: [], complete: [] };
  for (let i = 0; i < warmup + runs; i++) {
    const phones = inputs(1, CONFIG.registry_size, i + 5_000).phones;
    let t = now();
    await admission.authenticate({ apiKey: ctx.apiKey, clientAddress: '127.0.0.1' }, { timeoutMs: 5_000 });
    const auth = now() - t;
    t = now();
    const admitted = await admission.admit(
      {
        orgId: ctx.orgId,
        keyId: ctx.keyId,
        country: COUNTRY,
        idempotencyKey: `bench-split-${ctx.run}-${i}`,
        fingerprint: `v1:${createHmac('sha256', 'bench')
          .update(JSON.stringify([COUNTRY, phones]))
          .digest('hex')}`,
        inputCount: 1,
        kind: admissionv1.RequestKind.SYNC,
      },
      { timeoutMs: 5_000 },
    );
    const admit = now() - t;
    t = now();
    await adapter.check({ country: COUNTRY, phones }, { timeoutMs: 5_000 });
    const check = now() - t;
    t = now();
    await admission.complete({ admissionId: admitted.admissionId }, { timeoutMs: 5_000 });
    const complete = now() - t;
    if (i >= warmup) {
      samples.authenticate.push(auth);
      samples.admit.push(admit);
      samples.check_one.push(check);
      samples.complete.push(complete);
    }
  }
  return Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, summarize(v)]));
}

/**
 * The quota ledger alone: Reserve + Commit pairs (what every v1 request does) from 32 concurrent
 * callers, first all on ONE account (organization, country, month), then spread over 8 accounts.
 * Every Reserve and Commit locks its account row until its transaction is durable, so one account
 * serializes; the difference between the two figures is that lock.
 */
async function benchQuotaLock(ctx) {
  const quota = createClient(quotav1.QuotaService, rpcTransport(ctx.stack.addresses.quota));
  const admin = createClient(quotav1.QuotaAdminService, rpcTransport(ctx.stack.addresses.quota));
  const accounts = Array.from({ length: 8 }, (_, i) => `bench-quota-${ctx.run}-${i}`);
  for (const orgId of accounts)
    await admin.setLimit({ orgId, country: COUNTRY, limit: 1_000_000_000_000n }, { timeoutMs: 5_000 });
  const seconds = smoke ? 2 : 10;
  const run = async (orgsUsed) => {
    let pairs = 0;
    const until = now() + seconds * 1000;
    const latencies = [];
    const caller = async (c) => {
      const orgId = accounts[c % orgsUsed];
      while (now() < until) {
        const reservationId = randomUUID();
        const t = now();
        await quota.reserve(
          { reservationId, orgId, country: COUNTRY, amount: 1n, kind: quotav1.UsageKind.SYNC },
          { timeoutMs: 10_000 },
        );
        await quota.commit({ reservationId }, { timeoutMs: 10_000 });
        latencies.push(now() - t);
        pairs++;
      }
    };
    const t0 = now();
    await Promise.all(Array.from({ length: 32 }, (_, c) => caller(c)));
    return { pairs, pairs_per_s: round(pairs / ((now() - t0) / 1000), 0), latency_ms: summarize(latencies) };
  };
  const one = await run(1);
  const eight = await run(8);
  return { concurrency: 32, seconds, one_account: one, eight_accounts: eight };
}

function autocannonRun(ctx, seconds, tag) {
  const bodies = Array.from({ length: 1000 }, (_, i) =>
    body(inputs(1, CONFIG.registry_size, i + 1000).phones),
  );
  let n = 0;
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${ctx.stack.baseUrl}/v1/scrub`,
        method: 'POST',
        connections: CONFIG.single_connections,
        duration: seconds,
        headers: { authorization: `Bearer ${ctx.apiKey}`, 'content-type': 'application/json' },
        requests: [
          {
            setupRequest: (req) => {
              n++;
              return {
                ...req,
                body: bodies[n % 1000],
                headers: { ...req.headers, 'idempotency-key': `bench-ac-${ctx.run}-${tag}-${n}` },
              };
            },
          },
        ],
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
    autocannon.track(instance, {
      renderProgressBar: false,
      renderResultsTable: false,
      renderLatencyTable: false,
    });
  });
}

/** Mean requests per batched internal call of the gateway (dnc_gateway_batch_size), by call. */
async function batchSizes(ctx) {
  const text = await metricsText(ctx.stack, 'gateway');
  const out = {};
  for (const call of ['admit', 'check', 'complete']) {
    const h = histogram(text, 'dnc_gateway_batch_size', `call="${call}"`);
    out[call] = { calls: h.count, requests: h.sum };
  }
  return out;
}

async function benchV1Sustained(ctx) {
  const warm = await autocannonRun(ctx, smoke ? 1 : 5, 'warmup');
  const before = await batchSizes(ctx);
  const r = await autocannonRun(ctx, CONFIG.single_duration_s, 'run');
  const after = await batchSizes(ctx);
  const batch_mean = Object.fromEntries(
    Object.keys(after).map((k) => {
      const calls = after[k].calls - before[k].calls;
      return [k, calls > 0 ? round((after[k].requests - before[k].requests) / calls, 1) : null];
    }),
  );
  const statusCodes = Object.fromEntries(
    Object.entries(r.statusCodeStats ?? {}).map(([k, v]) => [k, v.count]),
  );
  const ok = statusCodes['200'] ?? r['2xx'];
  return {
    warmup_requests: warm.requests.total,
    duration_s: r.duration,
    connections: r.connections,
    requests: r.requests.total,
    ok,
    rps_mean: round(ok / r.duration, 0),
    latency_ms: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max },
    errors: r.errors + r.timeouts + r.non2xx,
    non_2xx: r.non2xx,
    socket_errors: r.errors,
    timeouts: r.timeouts,
    status_codes: statusCodes,
    batch_mean,
  };
}

/** The gateway of this build does not route POST /v2/scrub: v2 is reported as not measured. */
class V2Unavailable extends Error {
  constructor() {
    super('POST /v2/scrub answered 404 not_found: this build of the gateway does not route v2');
  }
}

/** One v2 job: POST (admission) -> poll until terminal -> download; stage times from the jobs table. */
async function runJob(ctx, size, seed, tag) {
  const { phones, expected } = inputs(size, CONFIG.registry_size, seed, { e164: true });
  const bodyText = body(phones);
  const t0 = now();
  const res = await scrubRequest(ctx, '/v2/scrub', bodyText, `bench-v2-${ctx.run}-${tag}`);
  const job = await res.json();
  const tAdmitted = now();
  if (res.status === 404 && job.error === 'not_found') throw new V2Unavailable();
  if (res.status !== 202) throw new Error(`v2 POST: HTTP ${res.status} ${JSON.stringify(job).slice(0, 200)}`);
  let status = job.status;
  let polls = 0;
  while (status === 'queued' || status === 'running') {
    await sleep(CONFIG.poll_interval_ms);
    const r = await fetch(job.status_url, { headers: { authorization: `Bearer ${ctx.apiKey}` } });
    const resource = await r.json();
    polls++;
    if (r.status !== 200) throw new Error(`v2 status: HTTP ${r.status}`);
    status = resource.status;
  }
  const tDone = now();
  if (status !== 'succeeded') throw new Error(`v2 job ended ${status}`);
  const r = await fetch(job.result_url, { headers: { authorization: `Bearer ${ctx.apiKey}` } });
  const text = await r.text();
  const tDownloaded = now();
  if (r.status !== 200) throw new Error(`v2 result: HTTP ${r.status}`);
  expectSummary(`v2 ${tag}`, JSON.parse(text).summary, expected, size);
  const row = await jobTimes(ctx, job.job_id);
  return {
    path: 'HTTP',
    inputs: size,
    request_bytes: bodyText.length,
    result_bytes: text.length,
    total_ms: round(tDownloaded - t0, 1),
    admission_ms: round(tAdmitted - t0, 1),
    queue_wait_ms: round(Number(row.queue_ms), 1),
    execution_ms: round(Number(row.exec_ms), 1),
    // From the 202 to the poll that saw `succeeded` (queue + execution + up to one poll interval).
    until_succeeded_seen_ms: round(tDone - tAdmitted, 1),
    download_ms: round(tDownloaded - tDone, 1),
    polls,
  };
}

/**
 * The v2 pipeline without the gateway's HTTP layer, for a build whose gateway does not route v2 yet:
 * what POST /v2/scrub does (Admit kind JOB -> SubmitJob -> ConfirmJob), GetJob polling and the
 * streamed GetJobResult, over gRPC. Reported as such; the HTTP figures replace it once v2 is routed.
 */
async function runJobGrpc(ctx, size, seed, tag) {
  const { phones, expected } = inputs(size, CONFIG.registry_size, seed, { e164: true });
  const bodyText = body(phones);
  const admission = createClient(admissionv1.AdmissionService, rpcTransport(ctx.stack.addresses.admission));
  const jobs = createClient(jobsv1.JobsService, rpcTransport(ctx.stack.addresses.jobs));
  const secret = ctx.stack.commonEnv.DNC_FINGERPRINT_SECRET;
  const t0 = now();
  // The gateway parses the body and computes the fingerprint; both are part of admission.
  const parsed = JSON.parse(bodyText);
  const mac = createHmac('sha256', secret)
    .update(JSON.stringify([COUNTRY, parsed.phones]))
    .digest('hex');
  const tParsed = now();
  const admitted = await admission.admit(
    {
      orgId: ctx.orgId,
      keyId: ctx.keyId,
      country: COUNTRY,
      idempotencyKey: `bench-v2g-${ctx.run}-${tag}`,
      fingerprint: `v1:${mac}`,
      inputCount: size,
      kind: admissionv1.RequestKind.JOB,
    },
    { timeoutMs: 5_000 },
  );
  const tAdmit = now();
  const submitted = await jobs.submitJob(
    {
      jobId: admitted.jobId,
      orgId: ctx.orgId,
      reservationId: admitted.admissionId,
      country: COUNTRY,
      canonicalPhones: Buffer.from(JSON.stringify(parsed.phones)),
    },
    { timeoutMs: 30_000 },
  );
  const jobId = submitted.job.jobId;
  const tSubmitted = now();
  await admission.confirmJob({ admissionId: admitted.admissionId, jobId }, { timeoutMs: 5_000 });
  const tAdmitted = now();
  let status = submitted.job.status;
  let polls = 0;
  const active = (st) =>
    st === jobsv1.JobStatus.QUEUED || st === jobsv1.JobStatus.RUNNING || st === jobsv1.JobStatus.UNSPECIFIED;
  while (active(status)) {
    await sleep(CONFIG.poll_interval_ms);
    status = (await jobs.getJob({ orgId: ctx.orgId, jobId }, { timeoutMs: 5_000 })).job.status;
    polls++;
  }
  const tDone = now();
  if (status !== jobsv1.JobStatus.SUCCEEDED) throw new Error(`v2 job (gRPC) ended with status ${status}`);
  const chunks = [];
  for await (const part of jobs.getJobResult({ orgId: ctx.orgId, jobId }, { timeoutMs: 60_000 }))
    chunks.push(part.chunk);
  const text = Buffer.concat(chunks).toString('utf8');
  const tDownloaded = now();
  expectSummary(`v2 ${tag}`, JSON.parse(text).summary, expected, size);
  const row = await jobTimes(ctx, jobId);
  return {
    path: 'gRPC (the gateway does not route v2 in this build)',
    inputs: size,
    request_bytes: bodyText.length,
    result_bytes: text.length,
    total_ms: round(tDownloaded - t0, 1),
    admission_ms: round(tAdmitted - t0, 1),
    admission_split_ms: {
      parse_and_fingerprint: round(tParsed - t0, 1),
      admit: round(tAdmit - tParsed, 1),
      submit_job: round(tSubmitted - tAdmit, 1),
      confirm_job: round(tAdmitted - tSubmitted, 1),
    },
    queue_wait_ms: round(Number(row.queue_ms), 1),
    execution_ms: round(Number(row.exec_ms), 1),
    until_succeeded_seen_ms: round(tDone - tAdmitted, 1),
    download_ms: round(tDownloaded - tDone, 1),
    polls,
  };
}

/** created -> started (queue wait) and started -> terminal (execution), from the scheduler's table. */
async function jobTimes(ctx, jobId) {
  const client = new pg.Client({ connectionString: ctx.databaseUrl });
  await client.connect();
  try {
    const q = await client.query(
      `SELECT extract(epoch FROM started_at - created_at) * 1000 AS queue_ms,
              extract(epoch FROM terminal_at - started_at) * 1000 AS exec_ms
         FROM jobs.jobs WHERE id = $1`,
      [jobId],
    );
    return q.rows[0];
  } finally {
    await client.end();
  }
}

/** One job through HTTP when the gateway routes v2, otherwise through gRPC (reported as such). */
async function runJobAny(ctx, size, seed, tag) {
  if (!ctx.v2Grpc) {
    try {
      return await runJob(ctx, size, seed, tag);
    } catch (error) {
      if (!(error instanceof V2Unavailable)) throw error;
      log(`${error.message}; measuring the v2 pipeline over gRPC instead`);
      ctx.v2Grpc = true;
      ctx.v2Unavailable = error.message;
    }
  }
  return runJobGrpc(ctx, size, seed, tag);
}

async function benchV2(ctx) {
  await runJobAny(ctx, Math.min(10_000, CONFIG.small_job_size), 50, 'warmup');
  return runJobAny(ctx, CONFIG.job_size, 2, 'large');
}

async function benchV2Concurrent(ctx) {
  const t0 = now();
  const jobs = await Promise.all(
    Array.from({ length: CONFIG.concurrent_jobs }, (_, i) =>
      runJobAny(ctx, CONFIG.small_job_size, 3 + i, `c${i}`),
    ),
  );
  return { makespan_ms: round(now() - t0, 1), jobs };
}

// ---- main ------------------------------------------------------------------------------------------

async function main() {
  const results = { config: CONFIG, environment: environment(ROOT), phases: {} };
  log(
    `${CONFIG.mode} run; floor first (one process, registry of ${CONFIG.registry_size.toLocaleString('en')})`,
  );
  results.floor = await runFloorProcess();

  const suffix = uniqueSuffix();
  const dbUrl = new URL(DATABASE);
  dbUrl.pathname = `/dnc_bench_${suffix}`;
  const databaseUrl = dbUrl.toString();
  const natsPrefix = `B${suffix}_`;
  const work = mkdtempSync(path.join(tmpdir(), 'dnc-bench-'));
  const logDir = path.join(work, 'logs');
  const registryFile = path.join(work, `${COUNTRY}.txt`);
  let stack;
  let failed = false;
  let stopping = false;
  const cleanup = async () => {
    if (stopping) return;
    stopping = true;
    await stack?.close().catch(() => {});
    await dropDatabase(databaseUrl).catch((e) => log(`could not drop the bench database: ${e.message}`));
    await dropNatsPrefix(NATS, natsPrefix).catch((e) =>
      log(`could not remove the NATS prefix: ${e.message}`),
    );
    await dropRedisPrefix(natsPrefix).catch((e) => log(`could not remove the Redis keys: ${e.message}`));
    if (failed || args['keep-logs']) {
      rmSync(registryFile, { force: true });
      log(`service logs kept in ${logDir}`);
    } else rmSync(work, { recursive: true, force: true });
  };
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.once(sig, () => {
      failed = true;
      log(`${sig}: stopping every process`);
      void cleanup().then(() => process.exit(130));
    });
  }

  try {
    let t = now();
    const registryBytes = await writeRegistryFile(registryFile, CONFIG.registry_size);
    results.registry = {
      size: CONFIG.registry_size,
      file_bytes: registryBytes,
      generate_s: round((now() - t) / 1000, 1),
    };

    stack = await Stack.create({
      root: ROOT,
      databaseUrl,
      redisUrl: REDIS,
      natsUrl: NATS,
      natsPrefix,
      countries: [COUNTRY],
      logDir,
      env: { DNC_REDIS_PREFIX: natsPrefix },
    });
    t = now();
    log('starting every service as its own process');
    await stack.up();
    results.stack_start_s = round((now() - t) / 1000, 1);
    const ctx = { stack, databaseUrl, phases: results.phases, run: suffix, apiKey: '', idle: {} };
    const seeded = await seed(stack);
    Object.assign(ctx, seeded);

    ctx.idle = await idleBaseline(ctx, smoke ? 2 : 5);
    results.idle_cpu_s_per_s = ctx.idle;
    const adapterPid = stack.child(`adapter-${COUNTRY}`).pid;
    results.registry.adapter_rss_before_mib = rssMiB(adapterPid).rss;
    await phase(ctx, 'registry load', async () => {
      t = now();
      const loaded = await stack.admin([
        'registry',
        'load',
        '--country',
        COUNTRY,
        '--file',
        registryFile,
        '--mode',
        'replace',
      ]);
      results.registry.load_s = round((now() - t) / 1000, 1);
      await waitCountryServing(stack);
      results.registry.load_until_serving_s = round((now() - t) / 1000, 1);
      results.registry.loaded = { accepted: loaded.accepted ?? loaded.registry_size ?? null };
    });
    const mem = rssMiB(adapterPid);
    results.registry.adapter_rss_mib = mem.rss;
    results.registry.adapter_peak_rss_mib = mem.peak;

    results.adapter = await phase(
      ctx,
      'adapter Check 10k',
      () => benchAdapterCheck(ctx),
      () => ({
        count: (CONFIG.check_runs + CONFIG.check_warmup) * CONFIG.v1_batch,
        unit: 'number checked',
      }),
    );
    results.v1_one = await phase(
      ctx,
      'v1 one number, sequential',
      () => benchV1One(ctx),
      (r) => ({
        count: r.n + (smoke ? 5 : 20),
        unit: 'request',
      }),
    );
    results.v1_fixed_split = await phase(
      ctx,
      'v1 fixed cost split (gRPC)',
      () => benchV1FixedSplit(ctx),
      (r) => ({ count: r.admit.n + (smoke ? 5 : 20), unit: 'request' }),
    );
    results.quota_lock = await phase(
      ctx,
      'quota Reserve+Commit, one vs 8 accounts',
      () => benchQuotaLock(ctx),
      (r) => ({ count: r.one_account.pairs + r.eight_accounts.pairs, unit: 'pair' }),
    );
    results.v1_10k = await phase(
      ctx,
      'v1 10k',
      () => benchV1Batch(ctx),
      () => ({
        count: (CONFIG.v1_runs + CONFIG.v1_warmup) * CONFIG.v1_batch,
        unit: 'number',
      }),
    );
    results.v1_sustained = await phase(
      ctx,
      'v1 single sustained',
      () => benchV1Sustained(ctx),
      (r) => ({
        count: r.requests + r.warmup_requests,
        unit: 'request',
      }),
    );
    // A v2 job that does not succeed is reported (and fails the run) without losing the other figures.
    try {
      results.v2_job = await phase(
        ctx,
        'v2 large job',
        () => benchV2(ctx),
        (r) => ({
          count: r.inputs + Math.min(10_000, CONFIG.small_job_size),
          unit: 'number',
        }),
      );
      results.v2_concurrent = await phase(
        ctx,
        'v2 4 concurrent jobs',
        () => benchV2Concurrent(ctx),
        (r) => ({
          count: r.jobs.reduce((n, j) => n + j.inputs, 0),
          unit: 'number',
        }),
      );
    } catch (error) {
      results.v2_error = error instanceof Error ? error.message : String(error);
      log(`v2 failed: ${results.v2_error}`);
      failed = true;
    }
    if (ctx.v2Unavailable) results.v2_note = `${ctx.v2Unavailable}; v2 measured over gRPC`;
    results.nats_streams = await natsStreams(natsPrefix);
    results.service_rss_mib = Object.fromEntries(
      [...stack.processes.keys()].map((n) => [n, rssMiB(stack.child(n)?.pid).rss]),
    );
    results.environment.load_average_at_end = (await import('node:os')).loadavg().map((l) => round(l, 1));
  } catch (error) {
    failed = true;
    throw error;
  } finally {
    await cleanup();
  }
  results.finished_at = new Date().toISOString();
  writeFileSync(args.out, `${JSON.stringify(results, null, 2)}\n`);
  printReport(results, args.out);
  if (results.v2_error) process.exitCode = 1;
}

main().catch((error) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
