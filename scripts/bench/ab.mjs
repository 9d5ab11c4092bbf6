#!/usr/bin/env node
// `node scripts/bench/ab.mjs --base DIR [--rounds N] [--per N] [--size N] [--numbers N]`: the lone v1
// request of two builds (one number, or `--numbers` numbers: 10000 for the v1 10k figure), measured
// side by side in one run, one request after another. DIR is another built checkout (with its
// own node_modules, `npm ci && npm run build`), for example the commit before a change; this checkout
// is the other (or `--this DIR`, a second built checkout: a bisect step run from one place). Both
// stacks run at once, each on its own database, NATS and Redis prefix; the rounds alternate between
// them (order reversed every round), so a neighbour's load on a shared machine falls on both. Prints
// each round's p50 per build and their ratio, then the median of the ratios (this checkout / base),
// the p50 of every request and the CPU milliseconds per request of each service. Compare ratios, not
// absolute times: on a busy machine those move by 2x between runs.
//
// `--load SECONDS [--connections N]`: throughput instead of lone requests. Each round runs the bench's
// single-number load (autocannon, N keep-alive connections, default 48, a unique Idempotency-Key per
// request, the bodies of `benchV1Sustained`) for SECONDS against one stack while the other idles,
// the order reversed every round; prints each round's req/s, p50 and p99 per build, the median of the
// req/s ratios (this / base) and the CPU milliseconds per answered request of each service and of the
// PostgreSQL backends of the stack's database. Every stack warms up with one load of up to 5 s first.
// For a bisect step, 6 rounds of 10 s. `--rate R` caps the offered req/s (both builds batch alike: CPU
// per request compares directly); `--plaintext` runs builds with mutual TLS in plaintext (issue 18).
//
// `--v2 N`: one v2 job of N numbers (E.164, the bench's v2 workload) per build per round, one after
// another: admission (POST until 202), the whole job (POST until the result is downloaded), the queue
// wait (the scheduler's created_at -> started_at, as the bench reports it) and their ratios (this /
// base); every stack runs one 10,000-number job first. For the bench's v2 rows, 500000.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { statFields } from './system.mjs';
import { workerPhases } from './worker-log.mjs';

// Not config.mjs: it reads the command line (the bench's options) when loaded.
const ROOT = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));
const log = (line) => process.stderr.write(`ab: ${line}\n`);

const { values } = parseArgs({
  options: {
    base: { type: 'string' },
    rounds: { type: 'string', default: '12' },
    per: { type: 'string', default: '40' },
    size: { type: 'string', default: '10000' },
    warmup: { type: 'string' },
    numbers: { type: 'string', default: '1' },
    this: { type: 'string' },
    load: { type: 'string' },
    connections: { type: 'string', default: '48' },
    rate: { type: 'string' },
    plaintext: { type: 'boolean', default: false },
    v2: { type: 'string' },
    'base-env': { type: 'string', multiple: true },
  },
});
if (!values.base) {
  process.stderr.write(
    'usage: node scripts/bench/ab.mjs --base DIR [--rounds N] [--per N] [--size N] [--numbers N] [--warmup N] [--this DIR]\n' +
      '       node scripts/bench/ab.mjs --base DIR --load SECONDS [--connections N] [--rounds N] [--size N]\n' +
      '         [--rate R] [--plaintext] [--this DIR]\n' +
      '       node scripts/bench/ab.mjs --base DIR --v2 N [--rounds N] [--size N] [--plaintext] [--this DIR]\n' +
      '       any of them with --base-env NAME=VALUE (repeatable): a setting of the base services only\n',
  );
  process.exit(2);
}
const ROUNDS = Number(values.rounds);
const PER = Number(values.per);
const SIZE = Number(values.size);
const NUMBERS = Number(values.numbers);
const LOAD_S = values.load === undefined ? 0 : Number(values.load);
const CONNECTIONS = Number(values.connections);
const RATE = values.rate === undefined ? undefined : Number(values.rate);
const V2 = values.v2 === undefined ? 0 : Number(values.v2);
// A 10,000-number request warms the same code as about thirty one-number requests do.
const WARMUP = Number(values.warmup ?? (NUMBERS > 1 ? 30 : 300));
// The bench modules read the command line when loaded: give them only the smoke flag.
process.argv.splice(2, process.argv.length, '--smoke');

async function build(name, root, env = {}) {
  const bench = path.join(root, 'scripts/bench');
  const stackModule = await import(path.join(bench, 'bench-stack.mjs'));
  const system = await import(path.join(bench, 'system.mjs'));
  const workload = await import(path.join(bench, 'workload.mjs'));
  // Builds from before mutual TLS ignore the option (they are plaintext anyway).
  const ctx = await stackModule.createBenchStack({
    ...(values.plaintext ? { insecurePlaintext: true } : {}),
    env,
  });
  return { name, root, stackModule, system, workload, ctx, latencies: [], cpu: {}, requests: 0 };
}

async function start(s) {
  const { ctx, stackModule, workload } = s;
  await ctx.stack.up();
  Object.assign(ctx, await stackModule.seed(ctx.stack));
  await workload.writeRegistryFile(ctx.registryFile, SIZE);
  const load = ['registry', 'load', '--country', workload.COUNTRY, '--file', ctx.registryFile];
  await ctx.stack.admin([...load, '--mode', 'replace']);
  await stackModule.waitCountryServing(ctx.stack);
  s.bodies = Array.from({ length: NUMBERS > 1 ? 4 : 100 }, (_, i) =>
    workload.body(workload.inputs(NUMBERS, SIZE, i).phones),
  );
}

async function lone(s) {
  const i = s.requests++;
  const t = performance.now();
  const res = await s.stackModule.scrubRequest(
    s.ctx,
    '/v1/scrub',
    s.bodies[i % s.bodies.length],
    `ab-${s.ctx.run}-${i}`,
  );
  await res.text();
  if (res.status !== 200) throw new Error(`${s.name}: HTTP ${res.status}`);
  return performance.now() - t;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
};

/** The rows of one query on stack `s`'s database (a connection of its own, closed after). */
async function queryRows(s, text, params = []) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: s.ctx.databaseUrl });
  await client.connect();
  try {
    return (await client.query(text, params)).rows;
  } finally {
    await client.end();
  }
}

/** CPU seconds so far of the PostgreSQL backends serving stack `s`'s database, by pid. */
async function pgBackends(s) {
  const rows = await queryRows(
    s,
    'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
  );
  const out = new Map();
  for (const { pid } of rows) {
    const f = statFields(pid);
    if (f) out.set(pid, (Number(f[11]) + Number(f[12])) / 100);
  }
  return out;
}

/** CPU seconds the backends spent between two `pgBackends` (a backend new since counts whole). */
function pgDelta(before, after) {
  let sum = 0;
  for (const [pid, v] of after) sum += v - (before.get(pid) ?? 0);
  return sum;
}

/** One load of `seconds` against stack `s`: its req/s, p99 and CPU seconds per process. */
async function load(s, seconds, tag) {
  const { autocannonRun } = await import('./load.mjs');
  s.loadBodies ??= Array.from({ length: 1000 }, (_, i) =>
    s.workload.body(s.workload.inputs(1, SIZE, i + 1000).phones),
  );
  const bodies = s.loadBodies;
  const cpu0 = s.system.cpuSnapshot(s.ctx.stack);
  const pg0 = await pgBackends(s);
  const r = await autocannonRun({
    url: `${s.ctx.stack.baseUrl}/v1/scrub`,
    connections: CONNECTIONS,
    seconds,
    overallRate: RATE,
    bodies,
    baseHeaders: { authorization: `Bearer ${s.ctx.apiKey}` },
    headers: (n) => ({ 'idempotency-key': `ab-ac-${s.ctx.run}-${tag}-${n}` }),
  });
  const cpu = s.system.cpuDelta(cpu0, s.system.cpuSnapshot(s.ctx.stack));
  cpu['postgres (its backends)'] = pgDelta(pg0, await pgBackends(s));
  const ok = r.statusCodeStats?.['200']?.count ?? r['2xx'];
  if (ok !== r.requests.total || r.errors + r.timeouts > 0)
    throw new Error(`${s.name}: ${r.requests.total - ok} of ${r.requests.total} not 200, ${r.errors} errors`);
  return { rps: ok / r.duration, p50: r.latency.p50, p99: r.latency.p99, ok, cpu };
}

async function loadRounds(stacks) {
  for (const s of stacks) await load(s, Math.min(5, LOAD_S), 'warmup');
  const ratios = [];
  for (let r = 0; r < ROUNDS; r++) {
    const got = {};
    for (const s of r % 2 ? [...stacks].reverse() : stacks) {
      got[s.name] = await load(s, LOAD_S, `r${r}`);
      s.requests += got[s.name].ok;
      s.latencies.push(got[s.name].rps);
      for (const [k, v] of Object.entries(got[s.name].cpu))
        if (!/server-wide|bench/.test(k)) s.cpu[k] = (s.cpu[k] ?? 0) + v;
    }
    ratios.push(got.this.rps / got.base.rps);
    const line = stacks
      .map(
        (s) =>
          `${s.name} ${got[s.name].rps.toFixed(0)} req/s p50 ${got[s.name].p50} p99 ${got[s.name].p99} ms`,
      )
      .join('  ');
    process.stdout.write(`round ${r}: ${line}  ratio ${ratios.at(-1).toFixed(3)}\n`);
  }
  for (const s of stacks) {
    const cpu = Object.entries(s.cpu)
      .map(([k, v]) => `${k} ${((v * 1000) / s.requests).toFixed(3)}`)
      .join(', ');
    process.stdout.write(
      `${s.name} (${s.root}): median ${median(s.latencies).toFixed(0)} req/s over ${ROUNDS} rounds; CPU ms per request: ${cpu}\n`,
    );
  }
  process.stdout.write(`median of the round ratios (this / base, req/s): ${median(ratios).toFixed(3)}\n`);
}

const sleep = (msec) => new Promise((resolve) => setTimeout(resolve, msec));

/** One v2 job of `n` numbers on stack `s`: milliseconds until the 202 and until the result is read. */
async function job(s, n, seed) {
  const { stackModule, workload, ctx } = s;
  const { phones, expected } = workload.inputs(n, SIZE, seed, { e164: true });
  const auth = { headers: { authorization: `Bearer ${ctx.apiKey}` } };
  const t0 = performance.now();
  const res = await stackModule.scrubRequest(
    ctx,
    '/v2/scrub',
    workload.body(phones),
    `ab-v2-${ctx.run}-${seed}`,
  );
  const created = await res.json();
  const admitted = performance.now() - t0;
  if (res.status !== 202) throw new Error(`${s.name}: v2 POST HTTP ${res.status}`);
  let { status } = created;
  while (status === 'queued' || status === 'running') {
    await sleep(25);
    status = (await (await fetch(created.status_url, auth)).json()).status;
  }
  if (status !== 'succeeded') throw new Error(`${s.name}: v2 job ended ${status}`);
  const result = await (await fetch(created.result_url, auth)).json();
  const total = performance.now() - t0;
  stackModule.expectSummary(`${s.name} v2`, result.summary, expected, n);
  return { admitted, total, queue: await queueWait(s, created.job_id) };
}

/** The job's created_at -> started_at in milliseconds, from the scheduler's row. */
async function queueWait(s, jobId) {
  const [row] = await queryRows(
    s,
    'SELECT extract(epoch FROM started_at - created_at) * 1000 AS ms FROM jobs.jobs WHERE id = $1',
    [jobId],
  );
  return Number(row.ms);
}

async function v2Rounds(stacks) {
  for (const s of stacks) await job(s, 10_000, 1);
  const ratios = { admitted: [], total: [], queue: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const got = {};
    for (const s of r % 2 ? [...stacks].reverse() : stacks) {
      got[s.name] = await job(s, V2, 10 + r);
      s.latencies.push(got[s.name]);
    }
    for (const k of ['admitted', 'total', 'queue']) ratios[k].push(got.this[k] / got.base[k]);
    const line = stacks
      .map(
        (s) =>
          `${s.name} 202 ${got[s.name].admitted.toFixed(0)} ms, queue ${got[s.name].queue.toFixed(0)} ms, job ${got[s.name].total.toFixed(0)} ms`,
      )
      .join('  ');
    process.stdout.write(
      `round ${r}: ${line}  ratios ${['admitted', 'queue', 'total'].map((k) => ratios[k].at(-1).toFixed(3)).join(' / ')}\n`,
    );
  }
  for (const s of stacks) {
    const [a, q, t] = ['admitted', 'queue', 'total'].map((k) =>
      median(s.latencies.map((x) => x[k])).toFixed(0),
    );
    const phases = workerPhases(path.join(s.ctx.work, 'logs'), V2);
    process.stdout.write(
      `${s.name} (${s.root}): ${V2}-number job, median 202 ${a} ms, queue wait ${q} ms, whole job ${t} ms; worker read / check / store ${phases}\n`,
    );
  }
  process.stdout.write(
    `median of the round ratios (this / base): admission ${median(ratios.admitted).toFixed(3)}, queue wait ${median(ratios.queue).toFixed(3)}, whole job ${median(ratios.total).toFixed(3)}\n`,
  );
}

/** `--base-env NAME=VALUE`: one build against itself with a setting changed (e.g. DNC_JOB_BLOB_FORMAT=1). */
function baseEnv() {
  const env = {};
  for (const pair of values['base-env'] ?? []) {
    const at = pair.indexOf('=');
    if (at < 1) throw new Error(`--base-env ${pair}: expected NAME=VALUE`);
    env[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return env;
}

async function main() {
  const stacks = [
    await build('base', path.resolve(values.base), baseEnv()),
    await build('this', path.resolve(values.this ?? ROOT)),
  ];
  const cleanup = () => Promise.all(stacks.map((s) => s.ctx.cleanup()));
  process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));
  try {
    log('starting both stacks');
    await Promise.all(stacks.map(start));
    if (LOAD_S > 0) return await loadRounds(stacks);
    if (V2 > 0) return await v2Rounds(stacks);
    for (const s of stacks) for (let i = 0; i < WARMUP; i++) await lone(s);
    const ratios = [];
    for (let r = 0; r < ROUNDS; r++) {
      const p50 = {};
      for (const s of r % 2 ? [...stacks].reverse() : stacks) {
        const cpu0 = s.system.cpuSnapshot(s.ctx.stack);
        const round = [];
        for (let i = 0; i < PER; i++) round.push(await lone(s));
        const cpu = s.system.cpuDelta(cpu0, s.system.cpuSnapshot(s.ctx.stack));
        for (const [k, v] of Object.entries(cpu))
          if (!/server-wide|bench/.test(k)) s.cpu[k] = (s.cpu[k] ?? 0) + v;
        s.latencies.push(...round);
        p50[s.name] = median(round);
      }
      ratios.push(p50.this / p50.base);
      const line = stacks.map((s) => `${s.name} ${p50[s.name].toFixed(2)} ms`).join('  ');
      process.stdout.write(`round ${r}: ${line}  ratio ${ratios.at(-1).toFixed(3)}\n`);
    }
    for (const s of stacks) {
      const cpu = Object.entries(s.cpu)
        .map(([k, v]) => `${k} ${((v * 1000) / (PER * ROUNDS)).toFixed(2)}`)
        .join(', ');
      process.stdout.write(
        `${s.name} (${s.root}): ${NUMBERS}-number p50 ${median(s.latencies).toFixed(2)} ms over ${s.latencies.length}; CPU ms per request: ${cpu}\n`,
      );
    }
    process.stdout.write(`median of the round ratios (this / base): ${median(ratios).toFixed(3)}\n`);
  } finally {
    await cleanup();
  }
}

main().catch((error) => {
  process.stderr.write(`ab failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
