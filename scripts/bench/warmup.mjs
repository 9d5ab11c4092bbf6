// `node scripts/bench/warmup.mjs [--requests N] [--block N] [--numbers N]`: how a fresh stack's v1
// requests speed up as V8 tiers its code up. One stack (every service its own process), v1 requests of
// `--numbers` numbers (default 1: the lone request) one after another from the first; per block of
// requests: p50, p90, and the CPU milliseconds and minor page faults per request of each service.
// Tells how many requests "warm" takes on this machine (the bench's lone figure is measured after
// `lone_warmup`). With DNC_PROFILE_DIR set, every service writes a V8 CPU profile of the whole run
// there when it stops.
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '6000' },
    block: { type: 'string', default: '500' },
    numbers: { type: 'string', default: '1' },
  },
});
const REQUESTS = Number(values.requests);
const BLOCK = Number(values.block);
const NUMBERS = Number(values.numbers);
// The bench modules read the command line when loaded: give them only the smoke flag.
process.argv.splice(2, process.argv.length, '--smoke');
const stackModule = await import('./bench-stack.mjs');
const system = await import('./system.mjs');
const workload = await import('./workload.mjs');
const { CONFIG } = await import('./config.mjs');

const ctx = await stackModule.createBenchStack({});
try {
  await ctx.stack.up();
  Object.assign(ctx, await stackModule.seed(ctx.stack));
  await workload.writeRegistryFile(ctx.registryFile, CONFIG.registry_size);
  await ctx.stack.admin([
    'registry',
    'load',
    '--country',
    workload.COUNTRY,
    '--file',
    ctx.registryFile,
    '--mode',
    'replace',
  ]);
  await stackModule.waitCountryServing(ctx.stack);
  const bodies = Array.from({ length: NUMBERS > 1 ? 4 : 100 }, (_, i) =>
    workload.body(workload.inputs(NUMBERS, CONFIG.registry_size, i).phones),
  );
  // Minor page faults so far of each service (field 10 of /proc/<pid>/stat).
  const faults = () => {
    const out = {};
    for (const [name] of ctx.stack.processes) {
      const pid = ctx.stack.child(name)?.pid;
      if (!pid) continue;
      const fields = system.statFields(pid);
      if (fields) out[name] = Number(fields[7]);
    }
    return out;
  };
  const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
  for (let from = 0; from < REQUESTS; from += BLOCK) {
    const cpu0 = system.cpuSnapshot(ctx.stack);
    const faults0 = faults();
    const times = [];
    for (let i = from; i < from + BLOCK; i++) {
      const t = performance.now();
      const res = await stackModule.scrubRequest(
        ctx,
        '/v1/scrub',
        bodies[i % bodies.length],
        `warm-${ctx.run}-${i}`,
      );
      await res.text();
      if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
      times.push(performance.now() - t);
    }
    const cpu = system.cpuDelta(cpu0, system.cpuSnapshot(ctx.stack));
    const faults1 = faults();
    const paged = Object.keys(faults1)
      .filter((k) => /gateway|admission|quota|adapter/.test(k))
      .map((k) => `${k} ${((faults1[k] - (faults0[k] ?? 0)) / BLOCK).toFixed(1)}`)
      .join(', ');
    const per = Object.entries(cpu)
      .filter(([k]) => /gateway|admission|quota|adapter/.test(k))
      .map(([k, v]) => `${k} ${((v * 1000) / BLOCK).toFixed(2)}`)
      .join(', ');
    console.log(
      `requests ${String(from).padStart(5)}-${from + BLOCK - 1}: p50 ${pct(times, 0.5).toFixed(2)} ms p90 ${pct(times, 0.9).toFixed(2)} ms | CPU ms per request: ${per} | page faults per request: ${paged}`,
    );
  }
} finally {
  await ctx.cleanup();
}
