#!/usr/bin/env node
// `npm run bench [-- --smoke]`: every service as its own process against the real PostgreSQL, Redis
// and NATS, a synthetic registry of 10,000,000 numbers, and each figure printed beside its floor:
// the same work in one process without the service (floor.mjs), and what bounds any request on this
// machine, a minimal HTTP round trip and PostgreSQL's durable commit (floors.mjs).
//
// Options: --smoke (tiny registry, few runs, ~1-2 min: what CI runs), --size N (registry), --runs N,
// --duration S (autocannon), --connections N, --job N, --small-job N, --out FILE, --keep-logs.
// Writes bench-results.json (every figure, git commit, environment). Never asserts: machines are
// noisy; the targets are printed beside the figures. Exit code is non-zero only when the bench could
// not run (or a response was wrong).
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { benchAdapterCheck, benchQuotaLock } from './adapter.mjs';
import { createBenchStack, idleBaseline, phase, seed, waitCountryServing } from './bench-stack.mjs';
import { args, CONFIG, log, ROOT, smoke } from './config.mjs';
import { httpFloor, pgFloor, runFloorProcess } from './floors.mjs';
import { rssNow } from './memory.mjs';
import { printReport } from './report.mjs';
import { fasterV2Floor, now, round, v2FloorOf } from './stats.mjs';
import { environment, rssMiB } from './system.mjs';
import { benchV1Batch, benchV1FixedSplit, benchV1Lone, benchV1LoneWarmUp, benchV1Sustained } from './v1.mjs';
import { benchV2Concurrent, benchV2First, benchV2Repeated } from './v2.mjs';
import { COUNTRY, writeRegistryFile } from './workload.mjs';

async function loadRegistry(ctx, results) {
  const { stack } = ctx;
  let t = now();
  const registryBytes = await writeRegistryFile(ctx.registryFile, CONFIG.registry_size);
  results.registry = {
    size: CONFIG.registry_size,
    file_bytes: registryBytes,
    generate_s: round((now() - t) / 1000, 1),
  };
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
      ctx.registryFile,
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
}

async function v1Phases(ctx, results) {
  // The lone request's warm-up (the first requests of processes that have not served yet) is its
  // own phase, so the per-request costs below are those of warm processes.
  const cold = await phase(ctx, 'v1 one number, warm-up', () => benchV1LoneWarmUp(ctx));
  results.v1_one = await phase(
    ctx,
    'v1 one number, sequential',
    async () => ({ ...(await benchV1Lone(ctx)), cold_first_20: cold }),
    (r) => ({ count: r.n, unit: 'request' }),
  );
  results.v1_fixed_split = await phase(
    ctx,
    'v1 fixed cost split (internal calls alone)',
    () => benchV1FixedSplit(ctx),
    (r) => ({ count: r.admit.n + (smoke ? 10 : 100), unit: 'request' }),
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
    () => ({ count: (CONFIG.v1_runs + CONFIG.v1_warmup) * CONFIG.v1_batch, unit: 'number' }),
  );
  results.v1_sustained = await phase(
    ctx,
    'v1 single sustained',
    () => benchV1Sustained(ctx),
    (r) => ({ count: r.requests + r.warmup_requests, unit: 'request' }),
  );
  // The lone request again, once the processes have served every phase above (the single-number load's
  // tens of thousands of requests run the same code): how far the figure above, taken after
  // `lone_warmup` requests, is from that of a process that has been serving for a while. Reported, not
  // judged: the target is read on the figure above.
  results.v1_one_after_load = await phase(
    ctx,
    'v1 one number, after the load',
    () => benchV1Lone(ctx, 200_000),
    (r) => ({ count: r.n, unit: 'request' }),
  );
}

/**
 * The VM's speed drifts within minutes, and the v2 phases run 3-4 minutes after the floor: the v2 part
 * of the floor is measured again right before them (the stack up and idle), and each v2 ratio is judged
 * against the faster of the two measurements.
 */
async function v2FloorAgain(results) {
  log('floor again, its v2 part: right before the v2 phases');
  const again = await runFloorProcess({ only: 'job' });
  results.floor_v2_measured = { at_start: v2FloorOf(results.floor), before_v2: v2FloorOf(again) };
  Object.assign(results.floor, fasterV2Floor(results.floor, again));
}

async function v2Phases(ctx, results) {
  // A v2 job that does not succeed is reported (and fails the run) without losing the other figures.
  try {
    const first = await phase(
      ctx,
      'v2 large job',
      () => benchV2First(ctx),
      (r) => ({ count: r.inputs + Math.min(10_000, CONFIG.small_job_size), unit: 'number' }),
    );
    const repeated = await phase(
      ctx,
      'v2 large job, repeated',
      () => benchV2Repeated(ctx),
      (r) => ({ count: r.inputs * r.runs, unit: 'number' }),
    );
    results.v2_job = { ...repeated, first };
    results.v2_concurrent = await phase(
      ctx,
      'v2 4 concurrent jobs',
      () => benchV2Concurrent(ctx),
      (r) => ({ count: r.jobs.reduce((n, j) => n + j.inputs, 0), unit: 'number' }),
    );
  } catch (error) {
    results.v2_error = error instanceof Error ? error.message : String(error);
    log(`v2 failed: ${results.v2_error}`);
    ctx.failed = true;
  }
}

async function main() {
  const results = { config: CONFIG, environment: environment(ROOT), phases: {} };
  log(
    `${CONFIG.mode} run; floor first (one process, registry of ${CONFIG.registry_size.toLocaleString('en')})`,
  );
  results.floor = await runFloorProcess();
  log('HTTP floor: node:http in its own process, lone round trips then the single-number load');
  results.http_floor = await httpFloor();

  const ctx = await createBenchStack();
  ctx.phases = results.phases;
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      ctx.failed = true;
      log(`${signal}: stopping every process`);
      void ctx.cleanup().then(() => process.exit(130));
    });
  }
  try {
    let t = now();
    log('starting every service as its own process');
    await ctx.stack.up();
    results.stack_start_s = round((now() - t) / 1000, 1);
    log('PostgreSQL floor: pgbench, one-row durable commits');
    results.pg_floor = await pgFloor(ctx.databaseUrl, ctx.work);
    Object.assign(ctx, await seed(ctx.stack));
    ctx.idle = await idleBaseline(ctx, smoke ? 2 : 5);
    results.idle_per_s = ctx.idle;
    results.rss_idle_mib = { before_registry: rssNow(ctx.stack) };
    t = now();
    await loadRegistry(ctx, results);
    results.rss_idle_mib.after_registry = rssNow(ctx.stack);

    results.adapter = await phase(
      ctx,
      'adapter Check 10k',
      () => benchAdapterCheck(ctx),
      () => ({ count: (CONFIG.check_runs + CONFIG.check_warmup) * CONFIG.v1_batch, unit: 'number checked' }),
    );
    await v1Phases(ctx, results);
    await v2FloorAgain(results);
    await v2Phases(ctx, results);
    results.rss_idle_mib.at_end = rssNow(ctx.stack);
    results.nats_streams = await ctx.streams();
    results.environment.load_average_at_end = os.loadavg().map((l) => round(l, 1));
  } catch (error) {
    ctx.failed = true;
    throw error;
  } finally {
    await ctx.cleanup();
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
