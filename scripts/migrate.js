// `node scripts/run.js migrate`: the migration role of the container image (the Helm pre-install /
// pre-upgrade hook). Creates the database when missing and brings every platform schema up to date,
// each with its own migrations table and lock. Services also migrate at start (idempotent, locked), so
// this hook only moves the work out of the rollout. A registry adapter migrates its own
// `registry_<cc>` schema: with COUNTRY set, this role does that one too.
// Without COUNTRY it also creates the JetStream stream and KV buckets as the `provisioner` NATS user:
// each service connects with its own user, which may use them but not create them, so nothing else
// in an installed platform makes them.
import { fileURLToPath } from 'node:url';
import { connectNats, ensureDatabase, migrateSchema, NATS_PROVISIONER, provisionJetStream } from '@dnc/kit';

const schemas = [
  ['admission', '../services/admission/migrations'],
  ['quota', '../services/quota/migrations'],
  ['jobs', '../services/job-scheduler/migrations'],
  ['dashboard', '../services/dashboard/migrations'],
];

export async function main() {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) throw new Error('DATABASE_URL: required');
  const country = process.env.COUNTRY;
  if (country !== undefined && !/^[a-z]{2}$/.test(country)) throw new Error('COUNTRY: two lowercase letters');
  const user = process.env.DNC_NATS_USER;
  if (!country && user && user !== NATS_PROVISIONER)
    throw new Error(`DNC_NATS_USER: the migrate role creates the JetStream stream as ${NATS_PROVISIONER}`);
  const targets = country ? [[`registry_${country}`, '../services/registry-adapter/migrations']] : schemas;
  await ensureDatabase(databaseUrl);
  for (const [schema, dir] of targets) {
    const applied = await migrateSchema(databaseUrl, schema, fileURLToPath(new URL(dir, import.meta.url)));
    process.stdout.write(`${JSON.stringify({ schema, applied })}\n`);
  }
  if (!country) await provisionNats(process.env);
}

/** The stream and buckets every service needs (idempotent: an existing one is left as it is). */
async function provisionNats(env) {
  if (!env.NATS_URL) {
    process.stdout.write(`${JSON.stringify({ jetstream: 'skipped: NATS_URL not set' })}\n`);
    return;
  }
  const user = env.DNC_NATS_USER;
  const replicas = Number(env.DNC_JETSTREAM_REPLICAS ?? '1');
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > 5)
    throw new Error('DNC_JETSTREAM_REPLICAS: an integer from 1 to 5');
  const prefix = env.DNC_NATS_PREFIX ?? '';
  if (!/^[A-Za-z0-9_]*$/.test(prefix)) throw new Error('DNC_NATS_PREFIX: letters, digits and _ only');
  const nc = await connectNats(
    env.NATS_URL,
    'migrate',
    user ? { user, password: env.DNC_NATS_PASSWORD } : {},
  );
  try {
    await provisionJetStream(nc, prefix, replicas);
  } finally {
    await nc.close();
  }
  process.stdout.write(`${JSON.stringify({ jetstream: 'provisioned', replicas })}\n`);
}
