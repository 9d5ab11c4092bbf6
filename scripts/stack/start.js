#!/usr/bin/env node
// `npm start`: every service as its own process against local PostgreSQL, Redis and NATS, with a demo
// organization, API key, active purchases and a small registry per live country. Ctrl-C stops all.
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LIVE_COUNTRIES, LOCAL_STACK_BASE_PORT, natsServerBinary, Stack } from '@dnc/devstack';

const root = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));
const env = process.env;
const databaseUrl = env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/dnc';
const redisUrl = env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const natsUrl = env.NATS_URL ?? 'nats://127.0.0.1:4222';
// The stack's own nats-server (per-service users and permissions) when the binary is there and no
// NATS_URL was given; otherwise the server at NATS_URL, unauthenticated.
const privateNats = !env.NATS_URL && natsServerBinary() !== undefined;
const gatewayPort = Number(env.DNC_GATEWAY_PORT ?? 8080);
const publicBaseUrl = env.DNC_PUBLIC_BASE_URL ?? `http://127.0.0.1:${gatewayPort}`;
const dashboardPort = Number(env.DNC_DASHBOARD_PORT ?? 8090);
const echo = process.argv.includes('--logs');

const HOW_TO_START = {
  PostgreSQL: 'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start',
  Redis: 'redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no',
  NATS: 'nats-server -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server &  (JetStream must be enabled: -js)',
};

function reachable(url, defaultPort) {
  const u = new URL(url.includes('://') ? url : `nats://${url}`);
  return new Promise((resolve) => {
    const socket = net.connect({ host: u.hostname, port: Number(u.port || defaultPort), timeout: 2000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

async function checkDependencies() {
  const deps = [
    ['PostgreSQL', 'DATABASE_URL', databaseUrl, 5432],
    ['Redis', 'REDIS_URL', redisUrl, 6379],
    ...(privateNats ? [] : [['NATS', 'NATS_URL', natsUrl.split(',')[0], 4222]]),
  ];
  let ok = true;
  for (const [name, variable, url, port] of deps) {
    if (!(await reachable(url, port))) {
      ok = false;
      const host = new URL(url.includes('://') ? url : `nats://${url}`).host;
      process.stderr.write(
        `${name} is not reachable at ${host} (${variable}). Start it, for example:\n  ${HOW_TO_START[name]}\n`,
      );
    }
  }
  if (!ok) process.exit(1);
}

async function seed(stack) {
  const org = await stack.admin(['org', 'create', '--name', 'Demo Organization']);
  const key = await stack.admin(['key', 'create', '--org', org.org_id]);
  for (const country of LIVE_COUNTRIES) {
    const purchase = await stack.admin(['purchase', 'create', '--org', org.org_id, '--country', country]);
    await stack.admin(['purchase', 'pay', '--purchase', purchase.purchase_id]);
    // Colombia activates at payment; Mexico and Argentina need the activation step.
    if (country !== 'co') await stack.admin(['purchase', 'activate', '--purchase', purchase.purchase_id]);
    await stack.admin([
      'registry',
      'load',
      '--country',
      country,
      '--file',
      path.join(root, 'scripts/stack/sample-registry', `${country}.txt`),
      '--mode',
      'replace',
      // The sample registry is loaded again at every start, whatever was loaded in between.
      '--allow-older',
    ]);
  }
  return { orgId: org.org_id, apiKey: key.api_key, owner: await demoOwner(stack, org.org_id) };
}

/**
 * The demo organization's first owner, as an operator and a person would make it: `dnc-admin user
 * invite` prints a one-time link, and the password is set through the dashboard's invitation page API.
 */
async function demoOwner(stack, orgId) {
  const email = `demo-${randomBytes(3).toString('hex')}@example.com`;
  const password = randomBytes(12).toString('base64url');
  const invitation = await stack.admin([
    'user',
    'invite',
    '--org',
    orgId,
    '--email',
    email,
    '--role',
    'owner',
  ]);
  const token = new URL(invitation.link).hash.replace('#token=', '');
  const r = await fetch(`${stack.addresses.dashboard}/api/invitations/accept`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token, password }),
  });
  if (r.status !== 201) throw new Error(`demo owner not created: dashboard answered ${r.status}`);
  return { email, password };
}

await checkDependencies();
const logDir = path.join(root, '.stack/logs');
mkdirSync(logDir, { recursive: true });
const stack = await Stack.create({
  root,
  databaseUrl,
  redisUrl,
  natsUrl,
  natsPrefix: env.DNC_NATS_PREFIX ?? '',
  gatewayPort,
  dashboardPort,
  basePort: Number(env.DNC_STACK_BASE_PORT ?? LOCAL_STACK_BASE_PORT),
  publicBaseUrl,
  logDir,
  echo,
  // Mutual TLS between every process, certificates of a local CA made at start (in a temporary
  // directory, removed at stop). DNC_INSECURE_PLAINTEXT=1 turns it off: each process says so loudly.
  insecurePlaintext: env.DNC_INSECURE_PLAINTEXT === '1',
  // The stack's own nats-server, one user per service with only the subjects it needs; NATS_URL
  // given: that server instead (unauthenticated, as before).
  privateNats,
  env: {
    ...(env.DNC_FINGERPRINT_SECRET ? { DNC_FINGERPRINT_SECRET: env.DNC_FINGERPRINT_SECRET } : {}),
    ...(env.DNC_IDEMPOTENCY_KEY_SECRET ? { DNC_IDEMPOTENCY_KEY_SECRET: env.DNC_IDEMPOTENCY_KEY_SECRET } : {}),
    ...(env.DNC_KEKS ? { DNC_KEKS: env.DNC_KEKS, DNC_KEK_ACTIVE_ID: env.DNC_KEK_ACTIVE_ID ?? '' } : {}),
    ...(env.DNC_TOTP_KEYS
      ? { DNC_TOTP_KEYS: env.DNC_TOTP_KEYS, DNC_TOTP_KEY_ACTIVE_ID: env.DNC_TOTP_KEY_ACTIVE_ID ?? '' }
      : {}),
  },
});

let stopping = false;
const stop = async (code) => {
  if (stopping) return;
  stopping = true;
  process.stdout.write('\nstopping every service...\n');
  await stack.close();
  process.exit(code);
};
process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));

try {
  process.stdout.write(`starting services (logs in ${path.relative(process.cwd(), logDir) || logDir}/)...\n`);
  await stack.up();
  const demo = await seed(stack);
  const a = stack.addresses;
  process.stdout.write(`
dnc-scrub is running: every service is its own process.
  gateway        ${a.gateway}
  dashboard      ${a.dashboard}
  admission      ${a.admission}    quota ${a.quota}    job-scheduler ${a.jobs}
  adapters       ${Object.entries(a.adapters)
    .map(([c, u]) => `${c} ${u}`)
    .join('   ')}

Demo organization ${demo.orgId} with active purchases for mx, ar, co and a sample registry each.
Demo API key (shown once): ${demo.apiKey}

Dashboard: ${a.dashboard}
  sign in as ${demo.owner.email} with the password ${demo.owner.password} (owner of the demo organization)

Try it:
  curl -s -X POST ${a.gateway}/v1/scrub \\
    -H 'Authorization: Bearer ${demo.apiKey}' \\
    -H 'Content-Type: application/json' \\
    -H "Idempotency-Key: $(uuidgen 2>/dev/null || date +%s%N)" \\
    -d '{"country":"co","phones":["+57 300 123 4567","3001234599","(601) 234 5678","12345","+52 55 1234 5678"]}'

Internal calls are mutual TLS: each process has its own certificate of a local CA (${stack.pki.dir}).
Operator CLI (as the operator identity, with its certificate):
  ${Object.entries(stack.adminEnv())
    .filter(([k]) => !k.startsWith('DNC_ADAPTER_ADDR_') && k !== 'DNC_GATEWAY_URL')
    .map(([k, v]) => `${k}=${v}`)
    .join(' ')} npx dnc-admin status

Ctrl-C stops everything.
`);
} catch (error) {
  process.stderr.write(`start failed: ${error instanceof Error ? error.message : String(error)}\n`);
  await stop(1);
}
