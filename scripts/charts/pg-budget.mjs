#!/usr/bin/env node
// `node scripts/charts/pg-budget.mjs --cluster <postgres-cluster.yaml> <rendered manifest.yaml>...`: the
// PostgreSQL connections the rendered releases can open at once, at their autoscalers' maxima and in the
// middle of a rolling update (max surge), against the cluster's max_connections. Found by a review
// (2026-12-03): the production values could open 450 connections (563 during a rollout) against 400,
// so pods scaled out at peak failed to connect (SQLSTATE 53300). scripts/charts/check.sh runs it on the
// production values; each role's pool is DNC_PG_POOL_MAX or its default (packages/kit PG_POOL_DEFAULT).
import { readFileSync } from 'node:fs';
import { PG_POOL_DEFAULT } from '@dnc/kit';
import { parse, parseAllDocuments } from 'yaml';

/** Connections the server keeps for itself: superuser_reserved_connections and the operator's own. */
const OPERATOR_CONNECTIONS = 7;
/** The migration hook: its database check and the migration runner's connection. */
const MIGRATION_CONNECTIONS = 2;

const args = process.argv.slice(2);
const at = args.indexOf('--cluster');
if (at < 0 || !args[at + 1] || args.length < 3) {
  process.stderr.write(
    'usage: node scripts/charts/pg-budget.mjs --cluster <cluster.yaml> <manifest.yaml>...\n',
  );
  process.exit(2);
}
const cluster = parse(readFileSync(args[at + 1], 'utf8'));
const files = args.filter((_, i) => i !== at && i !== at + 1);
const parameters = cluster?.spec?.postgresql?.parameters ?? {};
const maxConnections = Number(parameters.max_connections ?? 100);
const reserved = Number(parameters.superuser_reserved_connections ?? 3) + OPERATOR_CONNECTIONS;

const docs = files.flatMap((f) => parseAllDocuments(readFileSync(f, 'utf8')).map((d) => d.toJS()));
/** The most replicas a Deployment can have: its HPA's or ScaledObject's maximum, else its replicas. */
function maxReplicas(deployment) {
  const name = deployment.metadata.name;
  for (const d of docs) {
    if (d?.spec?.scaleTargetRef?.name !== name) continue;
    if (d.kind === 'HorizontalPodAutoscaler') return d.spec.maxReplicas;
    if (d.kind === 'ScaledObject') return d.spec.maxReplicaCount;
  }
  return deployment.spec.replicas ?? 1;
}
/** Pods a rolling update adds on top of `replicas` (maxSurge: a count or a percentage, rounded up). */
function surge(deployment, replicas) {
  const s = deployment.spec.strategy?.rollingUpdate?.maxSurge ?? '25%';
  return typeof s === 'string' && s.endsWith('%')
    ? Math.ceil((replicas * Number(s.slice(0, -1))) / 100)
    : Number(s);
}

const rows = [];
for (const d of docs) {
  const container = d?.spec?.template?.spec?.containers?.[0];
  const role = container?.args?.[0];
  if (d?.kind === 'Job' && role === 'migrate') {
    rows.push({ name: d.metadata.name, role, pods: 1, pool: MIGRATION_CONNECTIONS });
    continue;
  }
  if (d?.kind !== 'Deployment' || !(role in PG_POOL_DEFAULT)) continue;
  // The last entry of a name wins, as in Kubernetes; one from a Secret or field cannot be read here.
  const entry = container.env?.findLast((e) => e.name === 'DNC_PG_POOL_MAX');
  if (entry && entry.value === undefined) {
    process.stderr.write(`${d.metadata.name}: DNC_PG_POOL_MAX is not a literal value\n`);
    process.exit(1);
  }
  const configured = entry?.value;
  const pool = configured === undefined ? PG_POOL_DEFAULT[role] : Number(configured);
  const max = maxReplicas(d);
  rows.push({ name: d.metadata.name, role, pods: max + surge(d, max), pool });
}
if (rows.length === 0) {
  process.stderr.write('no workload with a PostgreSQL pool in the manifests\n');
  process.exit(1);
}
let total = 0;
for (const r of rows) {
  total += r.pods * r.pool;
  process.stdout.write(`${r.name} (${r.role}): ${r.pods} pods x ${r.pool} = ${r.pods * r.pool}\n`);
}
const budget = maxConnections - reserved;
process.stdout.write(
  `PostgreSQL connections at every maximum, mid-rollout: ${total} of ${budget} (max_connections ${maxConnections} - ${reserved} reserved)\n`,
);
process.exit(total <= budget ? 0 : 1);
