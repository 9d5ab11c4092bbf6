// S6 (NATS stopped, the work stream purged), S8 (PostgreSQL restarted, connections dropped
// mid-request), S9 (Redis down, slow, hanging): the private servers and their fault proxies.
import { natsNames } from '@dnc/kit';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { sleep } from '../../reliability/stack.mjs';
import { ms } from '../probe.mjs';
import { drainJobs, startTraffic } from '../traffic.mjs';

/** Documented answers while a dependency is out: 503 with a public code. */
const OUTAGE = new Set(['platform_failure', 'country_service_temporarily_unavailable']);
const undocumented = (t) => t.fivexx.filter((f) => !(f.status === 503 && OUTAGE.has(f.code)));

function outcome(scenario, faults, t, extra, figures) {
  const failures = [
    ...undocumented(t).map((f) => `${f.kind} answered ${f.status} ${f.code ?? ''}`),
    ...t.noAnswerLine(),
    ...extra,
  ];
  return {
    scenario,
    faults,
    requests: t.requests,
    jobs: t.count('v2 job'),
    pass: failures.length === 0,
    figures,
    failures: [...new Set(failures)],
  };
}

export async function s6NatsDown(world, ledger, { downS }) {
  const traffic = startTraffic(world, ledger, { concurrency: 6, pace: 30 });
  await sleep(3_000);
  await world.nats.restart(downS * 1000);
  // Back up: everything the work stream held is gone.
  const nc = await connect({ servers: world.servers.natsUrl });
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.purge(natsNames(world.stack.options.natsPrefix).jobsStream).catch(() => {});
  } finally {
    await nc.close();
  }
  await sleep(5_000);
  const t = await traffic.stop();
  const active = await drainJobs(world, ledger, 120_000);
  const served = t.kinds.get('v1 small')?.statuses.get(200) ?? 0;
  return outcome(
    `S6 NATS stopped ${downS} s, work stream purged`,
    'nats-server stopped; stream purged',
    t,
    active.length ? [`${active.length} accepted jobs not terminal 120 s after NATS came back`] : [],
    `v1 served ${served}/${t.count('v1 small')}; ${t.fivexx.length} 503; every job terminal after the drain: ${active.length === 0}`,
  );
}

export async function s8PostgresRestart(world, ledger, { downS }) {
  const traffic = startTraffic(world, ledger, { concurrency: 6, pace: 30 });
  await sleep(3_000);
  for (let i = 0; i < 3; i++) {
    await world.pgProxy.resetAll();
    await sleep(2_000);
  }
  await world.pg.restart(downS * 1000);
  const back = Date.now();
  // Recovery: the first second from which v1 requests succeed again.
  let recoveredAfter = Number.NaN;
  while (Date.now() - back < 30_000) {
    const before = traffic.tally.kinds.get('v1 small')?.statuses.get(200) ?? 0;
    await sleep(1_000);
    if ((traffic.tally.kinds.get('v1 small')?.statuses.get(200) ?? 0) > before + 3) {
      recoveredAfter = Date.now() - back;
      break;
    }
  }
  await sleep(3_000);
  const t = await traffic.stop();
  const active = await drainJobs(world, ledger, 120_000);
  return outcome(
    `S8 PostgreSQL restart (${downS} s) + dropped connections`,
    '3 x all connections reset; server restarted',
    t,
    [
      ...(active.length ? [`${active.length} accepted jobs not terminal`] : []),
      ...(Number.isNaN(recoveredAfter) ? ['v1 did not recover within 30 s of PostgreSQL coming back'] : []),
    ],
    `${t.fivexx.length} 503 during the outage; v1 back ${ms(recoveredAfter)} after PostgreSQL`,
  );
}

export async function s9Redis(world, ledger, { phaseS }) {
  const traffic = startTraffic(world, ledger, {
    concurrency: 6,
    pace: 20,
    kinds: ['v1 small', 'v1 small', 'v2 job', 'poll'],
  });
  await sleep(2_000);
  await world.redisProxy.setFault({ kind: 'slow', delayMs: 300 });
  await sleep(phaseS * 1000);
  await world.redisProxy.setFault({ kind: 'hang' });
  await sleep(phaseS * 1000);
  await world.redisProxy.setFault({ kind: 'pass' });
  await world.redis.restart(phaseS * 1000);
  await sleep(3_000);
  const t = await traffic.stop();
  const p99 = t.p('v1 small', 0.99);
  const worst = Math.max(...(t.kinds.get('v1 small')?.ms ?? [0]));
  return outcome(
    'S9 Redis slow, hanging, down',
    `slow 300 ms, hang, down (${phaseS} s each)`,
    t,
    [...(p99 > 2_000 ? [`v1 p99 ${ms(p99)} > 2 s while Redis was impaired`] : [])],
    `v1 p99 ${ms(p99)}, max ${ms(worst)}; ${t.fivexx.length} 5xx (degraded mode: rate limit per process)`,
  );
}
