// The chaos suite's world: private PostgreSQL, Redis and NATS (faults stop and restart them; the
// shared servers other suites use are never touched), a fault proxy in front of PostgreSQL, Redis and
// each adapter, the stack with replicas (3 gateways behind a small balancer, 2 admission, 2 workers,
// 2 adapters for `co`), and the organizations that drive the traffic. The balancer and the fault
// proxies run in a process of their own (proxies.mjs): not in the runner's event loop, which times
// every request that crosses them.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { idempotencyKeyMac } from '@dnc/admission';
import { DEV_IDEMPOTENCY_KEY_SECRET, privateNats, privatePostgres, privateRedis } from '@dnc/devstack';
import { loadRegistries, log, pool, seedOrg, startStack } from '../reliability/stack.mjs';
import { ProxyHost } from './proxies.mjs';

export const COUNTRY = 'co';

/** How the stack's admission names an Idempotency-Key in its records: its MAC under the stack's secret. */
export const keyMacOf = (world, idem) =>
  idempotencyKeyMac(world.stack.options.env?.DNC_IDEMPOTENCY_KEY_SECRET ?? DEV_IDEMPOTENCY_KEY_SECRET, idem);
const say = (line) => log('chaos', line);

const hostPort = (url) => {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port) };
};
const through = (url, proxy) => {
  const u = new URL(url);
  u.port = String(proxy.port);
  return u.toString();
};

/** An organization of one scenario: `co` bought, a quota and a rate limit it cannot exhaust. */
export const scenarioOrg = (world, name) =>
  seedOrg(world.stack, { name, countries: [COUNTRY], quota: 1_000_000_000, rateLimit: 60_000 });

/** Registry of the chaos traffic: registered lines are 300 000 0000 + even i, their neighbours odd. */
export function registryFile(size = 20_000) {
  const dir = mkdtempSync(path.join(tmpdir(), 'dnc-chaos-'));
  const file = path.join(dir, 'co.txt');
  const lines = [];
  for (let i = 0; i < size; i++) lines.push(`300${String(i * 2).padStart(7, '0')}`);
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

/**
 * The environment of every process of the chaos stack: short windows, leases and bounds, so each
 * scenario sees the mechanism it provokes act within the run.
 */
function chaosEnv(env) {
  return {
    DNC_ABUSE_AUTH_FAILURES: '1000000',
    DNC_ABUSE_ORG_FACTOR: '1000',
    // Short windows, so S2 finds a window boundary within seconds.
    DNC_RATE_WINDOW_SECONDS: '10',
    DNC_JOB_LEASE_MS: '4000',
    DNC_JOBS_ACK_WAIT_MS: '6000',
    DNC_SWEEP_INTERVAL_MS: '1000',
    DNC_REDISPATCH_AFTER_MS: '5000',
    DNC_ADAPTER_CALL_TIMEOUT_MS: '8000',
    DNC_SHUTDOWN_TIMEOUT_MS: '5000',
    // Abandoned v1 reservations (a gateway killed mid-request) released within the drain.
    DNC_SYNC_RESERVATION_TTL_SECONDS: '30',
    // The gateway's bounds, short enough for S17 to see them act within the run.
    DNC_REQUEST_TIMEOUT_MS: '10000',
    DNC_SOCKET_IDLE_TIMEOUT_MS: '20000',
    DNC_KEEP_ALIVE_TIMEOUT_MS: '15000',
    // S1 reads each process's live heap after a full collection through its inspector (probe.mjs):
    // loopback only, a port of its own (0: chosen by the system, printed to the process's log).
    NODE_OPTIONS: [process.env.NODE_OPTIONS, '--inspect=127.0.0.1:0'].filter(Boolean).join(' '),
    ...env,
  };
}

/** The private servers and the fault proxies in front of them, of each adapter and of the gateways. */
async function startServersAndProxies() {
  say('starting private PostgreSQL, Redis and NATS');
  const [pg, redis, nats] = await Promise.all([privatePostgres(), privateRedis(), privateNats()]);
  const proxyHost = await ProxyHost.spawn();
  const pgProxy = await proxyHost.start([hostPort(pg.url)]);
  const redisProxy = await proxyHost.start([hostPort(redis.url)]);
  const adapterProxies = [await proxyHost.start([]), await proxyHost.start([])];
  const balancer = await proxyHost.start([]);
  const servers = {
    databaseUrl: through(pg.url, pgProxy),
    redisUrl: through(redis.url, redisProxy),
    natsUrl: nats.url,
  };
  const close = async () => {
    for (const p of [balancer, pgProxy, redisProxy, ...adapterProxies]) await p.close();
    await proxyHost.close();
    await Promise.all([pg.stop(), redis.stop(), nats.stop()]);
  };
  return { pg, redis, nats, proxyHost, pgProxy, redisProxy, adapterProxies, balancer, servers, close };
}

/** Restart the scheduler and the workers with `extra` added (a value `undefined` restores the default). */
const restartJobsOf = (stack) => async (extra) => {
  const names = [...stack.processes.keys()].filter(
    (n) => n === 'job-scheduler' || n.startsWith('job-worker'),
  );
  for (const n of names) {
    const p = stack.processes.get(n);
    await stack.stop(n);
    for (const [k, v] of Object.entries(extra)) {
      if (v === undefined) delete p.env[k];
      else p.env[k] = v;
    }
    await stack.start(n);
  }
};

export async function buildWorld({ orgs, env = {} }) {
  const { close: closeServers, ...net } = await startServersAndProxies();
  try {
    return await worldOn(net, closeServers, { orgs, env });
  } catch (error) {
    // A world that cannot be built leaves nothing running (startStack stops its own stack).
    await closeServers().catch(() => {});
    throw error;
  }
}

async function worldOn(net, closeServers, { orgs, env }) {
  const { adapterProxies, balancer, servers } = net;
  const publicBaseUrl = `http://${balancer.address}`;
  say('starting the stack (3 gateways, 2 admission, 2 workers, 2 co adapters)');
  const { stack, teardown } = await startStack({
    label: 'chaos',
    servers,
    countries: [COUNTRY],
    publicBaseUrl,
    replicas: { gateway: 3, admission: 2, 'job-worker': 2, adapter: 2 },
    env: chaosEnv(env),
    processEnv: {
      // Callers reach each adapter through its fault proxy: the address the adapter announces.
      [`adapter-${COUNTRY}`]: { DNC_ADVERTISE_ADDR: `http://${adapterProxies[0].address}` },
      [`adapter-${COUNTRY}#2`]: { DNC_ADVERTISE_ADDR: `http://${adapterProxies[1].address}` },
    },
    beforeUp: async (s) => {
      for (const [i, url] of s.addresses.adapterReplicas[COUNTRY].entries()) {
        await adapterProxies[i].setUpstreams([hostPort(url)]);
      }
      await balancer.setUpstreams(s.addresses.gateways.map(hostPort));
    },
  });
  say('loading the registry and seeding organizations');
  let seeded;
  try {
    await loadRegistries(stack, { [COUNTRY]: registryFile() });
    seeded = await pool(
      Array.from({ length: orgs }, (_, i) => i),
      6,
      (i) =>
        seedOrg(stack, {
          name: `Chaos ${i + 1}`,
          countries: [COUNTRY],
          quota: 1_000_000_000,
          rateLimit: 60_000,
        }),
    );
  } catch (error) {
    await teardown().catch(() => {});
    throw error;
  }
  const close = async () => {
    await teardown();
    await closeServers();
  };
  return { stack, orgs: seeded, restartJobs: restartJobsOf(stack), ...net, publicBaseUrl, close };
}
