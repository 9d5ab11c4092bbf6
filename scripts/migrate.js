// `node scripts/run.js migrate`: the migration role of the container image (the Helm pre-install /
// pre-upgrade hook). Creates the database when missing and brings every platform schema up to date,
// each with its own migrations table and lock. Services also migrate at start (idempotent, locked), so
// this hook only moves the work out of the rollout. A registry adapter migrates its own
// `registry_<cc>` schema: with COUNTRY set, this role does that one too.
import { fileURLToPath } from 'node:url';
import { ensureDatabase, migrateSchema } from '@dnc/kit';

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
  const targets = country ? [[`registry_${country}`, '../services/registry-adapter/migrations']] : schemas;
  await ensureDatabase(databaseUrl);
  for (const [schema, dir] of targets) {
    const applied = await migrateSchema(databaseUrl, schema, fileURLToPath(new URL(dir, import.meta.url)));
    process.stdout.write(`${JSON.stringify({ schema, applied })}\n`);
  }
}
