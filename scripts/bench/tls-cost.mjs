#!/usr/bin/env node
// `npm run bench:tls [-- --smoke] [--size N] [--runs N] [--duration S] [--connections N]`: what mutual
// TLS costs, measured in one run on one machine. The same stack is started twice, with mutual TLS
// (every internal call authenticated and encrypted, the default) and with DNC_INSECURE_PLAINTEXT=1
// (h2c, development only), alternating, twice each, and each time measures the two
// figures of the bench's table that internal calls dominate: v1 10k p50 (one request of 10,000
// numbers, sequential runs) and single-number req/s (autocannon, v1 one number per request). The
// figures of each mode are the mean of its two runs. Writes tls-cost.json (gitignored).
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { createBenchStack, phase, seed, waitCountryServing } from './bench-stack.mjs';
import { CONFIG, log, ROOT } from './config.mjs';
import { now, round } from './stats.mjs';
import { benchV1Batch, benchV1Sustained } from './v1.mjs';
import { COUNTRY, writeRegistryFile } from './workload.mjs';

async function measure(mode) {
  const ctx = await createBenchStack(mode === 'plaintext' ? { insecurePlaintext: true } : {});
  try {
    log(`${mode}: starting every service`);
    await ctx.stack.up();
    const seeded = await seed(ctx.stack);
    ctx.apiKey = seeded.apiKey;
    await writeRegistryFile(ctx.registryFile, CONFIG.registry_size);
    const args = ['registry', 'load', '--country', COUNTRY, '--file', ctx.registryFile, '--mode', 'replace'];
    await ctx.stack.admin(args);
    await waitCountryServing(ctx.stack);
    const v1 = await phase(ctx, `${mode} v1 10k`, () => benchV1Batch(ctx));
    const single = await phase(ctx, `${mode} v1 single sustained`, () => benchV1Sustained(ctx));
    return { v1_10k_p50_ms: v1.end_to_end_ms.p50, single_rps: single.rps_mean, v1, single };
  } finally {
    await ctx.cleanup();
  }
}

/** The mean of a mode's runs (two: a median of two is one of them). */
const mean = (xs) => round(xs.reduce((a, b) => a + b, 0) / xs.length, 2);

async function main() {
  const started = now();
  // Alternated, so a neighbour's load on a shared machine falls on both modes.
  const order = ['mtls', 'plaintext', 'mtls', 'plaintext'];
  const runs = { mtls: [], plaintext: [] };
  for (const mode of order) runs[mode].push(await measure(mode));
  const figure = (mode, key) => mean(runs[mode].map((r) => r[key]).filter(Number.isFinite));
  const result = {
    config: CONFIG,
    order,
    mtls: { v1_10k_p50_ms: figure('mtls', 'v1_10k_p50_ms'), single_rps: figure('mtls', 'single_rps') },
    plaintext: {
      v1_10k_p50_ms: figure('plaintext', 'v1_10k_p50_ms'),
      single_rps: figure('plaintext', 'single_rps'),
    },
    runs: Object.fromEntries(
      Object.entries(runs).map(([m, rs]) => [
        m,
        rs.map((r) => ({ v1_10k_p50_ms: r.v1_10k_p50_ms, single_rps: r.single_rps })),
      ]),
    ),
    seconds: round((now() - started) / 1000, 0),
  };
  result.cost = {
    v1_10k_p50_pct: round((result.mtls.v1_10k_p50_ms / result.plaintext.v1_10k_p50_ms - 1) * 100, 1),
    single_rps_pct: round((result.mtls.single_rps / result.plaintext.single_rps - 1) * 100, 1),
  };
  const out = path.join(ROOT, 'tls-cost.json');
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(
    [
      `TLS cost (${CONFIG.mode}, registry ${CONFIG.registry_size.toLocaleString('en')}; mean of 2 runs each, order ${order.join(', ')})`,
      '                     mTLS        plaintext   change',
      `v1 10k p50          ${String(result.mtls.v1_10k_p50_ms).padEnd(11)} ${String(result.plaintext.v1_10k_p50_ms).padEnd(11)} ${result.cost.v1_10k_p50_pct}%`,
      `single-number req/s ${String(result.mtls.single_rps).padEnd(11)} ${String(result.plaintext.single_rps).padEnd(11)} ${result.cost.single_rps_pct}%`,
      `every run: ${JSON.stringify(result.runs)}`,
      `written to ${out}`,
      '',
    ].join('\n'),
  );
}

main().catch((error) => {
  log(`failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
