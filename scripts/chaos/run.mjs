#!/usr/bin/env node
// `npm run chaos [-- --smoke] [--only S1,S4] [--duration S] [--customers N | --rate R]`: the stack with replicas on private
// servers, mixed traffic from many organizations, the faults of issue #15 one scenario at a time,
// then a drain and the invariants. Prints one table; exits non-zero when any row fails.
import { parseArgs } from 'node:util';
import { environment } from '../bench/system.mjs';
import { printTable } from '../reliability/report.mjs';
import { log, ROOT } from '../reliability/stack.mjs';
import { finalInvariants } from './invariants.mjs';
import { knownFor } from './known.mjs';
import { SCENARIOS } from './scenarios/index.mjs';
import { Ledger } from './traffic.mjs';
import { buildWorld } from './world.mjs';

const { values: args } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    only: { type: 'string' },
    duration: { type: 'string' },
    customers: { type: 'string' },
    rate: { type: 'string' },
  },
});
const smoke = args.smoke;
const MODE = smoke ? 'smoke' : 'full';
const only = args.only ? new Set(args.only.split(',').map((s) => s.trim().toUpperCase())) : undefined;
const settings = {
  smoke,
  loadS: Number(args.duration ?? (smoke ? 60 : 600)),
  // S1's customers acting at once (a closed loop: each waits for its answer, then 5 ms, then acts again).
  customers: Number(args.customers ?? 8),
  // Or an open loop: S1's actions arrive at this mean rate a second, answered or not.
  rate: args.rate ? Number(args.rate) : undefined,
  orgs: smoke ? 20 : 100,
};
const say = (line) => log('chaos', line);
const env0 = environment(ROOT);

say(`mode ${MODE}`);
// A client of this process that a fault cuts (a socket reset under it) must not end the run.
process.on('uncaughtException', (error) => say(`ignored in the runner: ${error.message}`));
// Ctrl-C or SIGTERM: the services, the private servers (their data directories) and the proxies are
// stopped before the runner exits, not left running; a second signal exits at once.
const building = buildWorld({ orgs: settings.orgs });
let closing;
const closeWorld = () => {
  // A signal during the build waits for it, so nothing it started is left behind.
  closing ??= building.then(
    (w) => w.close(),
    () => {},
  );
  return closing;
};
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
]) {
  process.once(signal, () => {
    say(`${signal}: stopping the stack and its servers (again to exit at once)`);
    void closeWorld().finally(() => process.exit(code));
  });
}
// A world that could not be built (a service not ready in time) ends the run: exit 1, not an
// exception the handler above would ignore while the servers it started keep the process alive.
const world = await building.catch((error) => {
  process.stderr.write(`chaos: the stack could not be built: ${error.message}\n`);
  process.exit(1);
});
const ledger = new Ledger();
const rows = [];
let exitCode = 1;
try {
  for (const scenario of SCENARIOS) {
    if (only && !only.has(scenario.id)) continue;
    say(`${scenario.id}: ${scenario.title}`);
    const t0 = Date.now();
    try {
      const row = await scenario.run(world, ledger, settings);
      rows.push({ ...row, figures: `${row.figures}; ${Math.round((Date.now() - t0) / 1000)} s` });
    } catch (error) {
      rows.push({
        scenario: `${scenario.id} ${scenario.title}`,
        pass: false,
        requests: 0,
        jobs: 0,
        figures: 'could not run',
        failures: [String(error.stack ?? error)],
      });
    }
    say(`${scenario.id}: ${rows.at(-1).pass ? 'pass' : 'FAIL'}`);
  }
  rows.push(
    await finalInvariants(world, ledger).catch((error) => ({
      scenario: 'invariants after the drain',
      pass: false,
      requests: 0,
      jobs: ledger.jobs.size,
      figures: 'could not run',
      failures: [String(error.stack ?? error)],
    })),
  );
  for (const row of rows) row.known = knownFor(row);
  exitCode = printTable('dnc-scrub chaos', MODE, rows, env0);
} catch (error) {
  process.stderr.write(`chaos: could not run: ${error.stack ?? error}\n`);
} finally {
  await closeWorld();
}
process.exit(exitCode);
