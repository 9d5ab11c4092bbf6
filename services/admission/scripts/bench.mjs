#!/usr/bin/env node
// Latency and throughput of Authenticate and Admit+Complete against the real PostgreSQL, Redis and
// NATS, quota and admission in this process (built dist). Usage: node services/admission/scripts/bench.mjs
import { randomUUID } from 'node:crypto';
import { createClient } from '@connectrpc/connect';
import { grpcTransport, parseConfig } from '@dnc/kit';
import { admissionv1, quotav1 } from '@dnc/proto';
import pg from 'pg';
import { quotaConfig, startQuota } from '../../quota/dist/index.js';
import { admissionConfig, startAdmission } from '../dist/index.js';

const N = Number(process.env.BENCH_N ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const base = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dbUrl = new URL(base);
dbUrl.pathname = `/dnc_bench_${Date.now().toString(36)}`;
const prefix = `B${Date.now().toString(36)}_`;

const quota = await startQuota(
  parseConfig(quotaConfig, {
    DATABASE_URL: dbUrl.toString(),
    DNC_GRPC_PORT: '0',
    DNC_METRICS_PORT: '0',
    DNC_LOG_LEVEL: 'silent',
  }),
);
const admission = await startAdmission(
  parseConfig(admissionConfig, {
    DATABASE_URL: dbUrl.toString(),
    DNC_QUOTA_ADDR: `http://127.0.0.1:${quota.port}`,
    DNC_GRPC_PORT: '0',
    DNC_METRICS_PORT: '0',
    DNC_LOG_LEVEL: 'silent',
    DNC_NATS_PREFIX: prefix,
    DNC_REDIS_PREFIX: prefix,
    DNC_IDEMPOTENCY_KEY_SECRET: 'bench-idempotency-key-secret',
  }),
);
const transport = grpcTransport(`http://127.0.0.1:${admission.port}`);
const api = createClient(admissionv1.AdmissionService, transport);
const admin = createClient(admissionv1.AdmissionAdminService, transport);
const { orgId } = await admin.createOrganization({ name: 'bench' });
await admin.setRateLimit({ orgId, limit: 60_000 });
const { keyId, apiKey } = await admin.createApiKey({ orgId });
const { purchase } = await admin.createPurchase({ orgId, country: 'co', monthlyQuota: 10_000_000n });
await admin.payPurchase({ purchaseId: purchase.purchaseId });
// A serving adapter entry so Admit passes availability.
const { connectNats, natsNames, openBucket, announceAdapter } = await import('@dnc/kit');
const nc = await connectNats(process.env.NATS_URL ?? 'nats://127.0.0.1:4222', 'bench');
const kv = await openBucket(nc, natsNames(prefix).adaptersBucket);
const entry = () => ({
  country: 'co',
  instance_id: 'bench',
  address: 'http://127.0.0.1:1',
  version: 'bench',
  status: 'serving',
  snapshot_id: 'b',
  registry_size: 0,
  updated_at: new Date().toISOString(),
});
await announceAdapter(kv, entry());
const beat = setInterval(() => void announceAdapter(kv, entry()), 1000);
await new Promise((r) => setTimeout(r, 300));

async function run(name, op) {
  const latencies = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < N) {
        next++;
        const t = performance.now();
        await op();
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const p = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))].toFixed(2);
  console.log(
    `${name}: ${N} calls, concurrency ${CONCURRENCY}: ${(N / seconds).toFixed(0)}/s, p50 ${p(0.5)} ms, p99 ${p(0.99)} ms`,
  );
}

try {
  await run('Authenticate', () => api.authenticate({ apiKey, clientAddress: '10.0.0.1' }));
  await run('Admit+Complete (v1)', async () => {
    const a = await api.admit({
      orgId,
      keyId,
      country: 'co',
      idempotencyKey: randomUUID(),
      fingerprint: `v1:${randomUUID().replaceAll('-', '').repeat(2)}`,
      inputCount: 10,
      kind: admissionv1.RequestKind.SYNC,
    });
    await api.complete({ admissionId: a.admissionId });
  });
  const q = createClient(quotav1.QuotaAdminService, grpcTransport(`http://127.0.0.1:${quota.port}`));
  const { accounts } = await q.getQuota({ orgId });
  console.log(
    `ledger after the run: used ${accounts[0].used}, reserved ${accounts[0].reserved} (expected used ${N * 10}, reserved 0)`,
  );
} finally {
  clearInterval(beat);
  await admission.service.shutdown('bench end');
  await quota.service.shutdown('bench end');
  const jsm = await (await import('@nats-io/jetstream')).jetstreamManager(nc);
  for await (const s of jsm.streams.names())
    if (s.startsWith(prefix) || s.startsWith(`KV_${prefix}`)) await jsm.streams.delete(s);
  await nc.close();
  const root = new URL(base);
  const c = new pg.Client({ connectionString: root.toString() });
  await c.connect();
  await c.query(`DROP DATABASE IF EXISTS "${dbUrl.pathname.slice(1)}" WITH (FORCE)`);
  await c.end();
}
