#!/usr/bin/env node
// `node scripts/bench/ab.mjs --base DIR [--rounds N] [--per N] [--size N] [--numbers N]`: the lone v1
// request of two builds (one number, or `--numbers` numbers: 10000 for the v1 10k figure), measured
// side by side in one run, one request after another. DIR is another built checkout (with its
// own node_modules, `npm ci && npm run build`), for example the commit before a change; this checkout
// is the other. Both stacks run at once, each on its own database, NATS and Redis prefix; the rounds
// alternate between them (order reversed every round), so a neighbour's load on a shared machine
// falls on both. Prints each round's p50 per build and their ratio, then the median of the ratios
// (this checkout / base), the p50 of every request and the CPU milliseconds per request of each
// service. Compare ratios, not absolute times: on a busy machine those move by 2x between runs.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

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
  },
});
if (!values.base) {
  process.stderr.write(
    'usage: node scripts/bench/ab.mjs --base DIR [--rounds N] [--per N] [--size N] [--numbers N] [--warmup N]\n',
  );
  process.exit(2);
}
const ROUNDS = Number(values.rounds);
const PER = Number(values.per);
const SIZE = Number(values.size);
const NUMBERS = Number(values.numbers);
// A 10,000-number request warms the same code as about thirty one-number requests do.
const WARMUP = Number(values.warmup ?? (NUMBERS > 1 ? 30 : 300));
// The bench modules read the command line when loaded: give them only the smoke flag.
process.argv.splice(2, process.argv.length, '--smoke');

async function build(name, root) {
  const bench = path.join(root, 'scripts/bench');
  const stackModule = await import(path.join(bench, 'bench-stack.mjs'));
  const system = await import(path.join(bench, 'system.mjs'));
  const workload = await import(path.join(bench, 'workload.mjs'));
  const ctx = await stackModule.createBenchStack();
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

async function main() {
  const stacks = [await build('base', path.resolve(values.base)), await build('this', ROOT)];
  const cleanup = () => Promise.all(stacks.map((s) => s.ctx.cleanup()));
  process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));
  try {
    log('starting both stacks');
    await Promise.all(stacks.map(start));
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
