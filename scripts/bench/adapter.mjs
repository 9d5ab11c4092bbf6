// The adapter's Check alone (the gateway's client and a pre-encoded gRPC request) and the quota
// ledger alone (Reserve + Commit pairs on one account and on eight).
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { createClient } from '@connectrpc/connect';
import { checkAt, checkRequest, RegistryAdapterCheck, rpcTransport } from '@dnc/kit';
import { quotav1, registryv1 } from '@dnc/proto';
import grpc from '@grpc/grpc-js';
import { histogram, metricsText } from './bench-stack.mjs';
import { CONFIG, smoke } from './config.mjs';
import { now, round, summarize, timeRuns } from './stats.mjs';
import { COUNTRY, inputs } from './workload.mjs';

/**
 * CheckRequest bytes as the platform's clients send them (field 1 country, field 3 phone_list), written
 * once ahead of the calls, so the round trip below is the adapter's share alone.
 */
function encodeCheckRequest(country, phones) {
  return Buffer.from(toBinary(registryv1.CheckRequestSchema, checkRequest(country, phones, 'phone_list')));
}

/** The stack's transport security for grpc-js as `identity` (mutual TLS unless the stack runs plaintext). */
async function grpcCredentials(ctx, identity) {
  const security = await ctx.stack.security(identity);
  if (security.mode !== 'mtls') return grpc.credentials.createInsecure();
  const dir = security.material.dir;
  const read = (f) => readFileSync(path.join(dir, f));
  return grpc.credentials.createSsl(read('ca.crt'), read('tls.key'), read('tls.crt'), {
    checkServerIdentity: (_host, cert) =>
      (cert.subjectaltname ?? '').includes(`/registry-adapter-${COUNTRY}`)
        ? undefined
        : new Error('not the adapter'),
  });
}

/** The stack's internal transport to `address` as `identity`, the server proving `peer`. */
export async function transportAs(ctx, identity, peer, address) {
  return rpcTransport(address, [], { security: await ctx.stack.security(identity), peer });
}

/** Check with a pre-encoded request over @grpc/grpc-js: the adapter's handler, decode and transport. */
async function benchAdapterCheckRaw(ctx, phones, expected) {
  const address = new URL(ctx.stack.addresses.adapters[COUNTRY]).host;
  const client = new grpc.Client(address, await grpcCredentials(ctx, 'gateway'), {
    'grpc.max_receive_message_length': 64 << 20,
    'grpc.max_send_message_length': 64 << 20,
  });
  const encoded = encodeCheckRequest(COUNTRY, phones);
  const call = () =>
    new Promise((resolve, reject) =>
      client.makeUnaryRequest(
        '/dnc.registry.v1.RegistryAdapterService/Check',
        (b) => b,
        (b) => fromBinary(registryv1.CheckResponseSchema, b),
        encoded,
        new grpc.Metadata(),
        { deadline: Date.now() + 10_000 },
        (e, r) => (e ? reject(e) : resolve(r)),
      ),
    );
  try {
    return await timeRuns(
      async (i) => {
        const answer = await call();
        if (i === 0) {
          const prohibited = answer.outcomes.filter((o) => o === registryv1.Outcome.PROHIBITED).length;
          if (prohibited !== expected.prohibited)
            throw new Error('adapter Check (pre-encoded): wrong answer');
        }
      },
      CONFIG.check_runs,
      CONFIG.check_warmup,
    );
  } finally {
    client.close();
  }
}

export async function benchAdapterCheck(ctx) {
  // The gateway's client: Check's answer read as bytes (kit RegistryAdapterCheck).
  const client = createClient(
    RegistryAdapterCheck,
    await transportAs(ctx, 'gateway', `registry-adapter-${COUNTRY}`, ctx.stack.addresses.adapters[COUNTRY]),
  );
  const { phones, expected } = inputs(CONFIG.v1_batch, CONFIG.registry_size, 1);
  const before = histogram(
    await metricsText(ctx.stack, `adapter-${COUNTRY}`),
    'dnc_adapter_check_duration_seconds',
  );
  const latency = await timeRuns(
    async (i) => {
      const answer = await checkAt(client, COUNTRY, phones, { timeoutMs: 10_000 });
      if (i === 0) {
        const prohibited = answer.outcomes.filter((o) => o === registryv1.Outcome.PROHIBITED).length;
        const safe = answer.outcomes.filter((o) => o === registryv1.Outcome.SAFE).length;
        if (prohibited !== expected.prohibited || safe !== expected.safe)
          throw new Error(
            `adapter Check: ${prohibited} prohibited / ${safe} safe, expected ${JSON.stringify(expected)}`,
          );
      }
    },
    CONFIG.check_runs,
    CONFIG.check_warmup,
  );
  const after = histogram(
    await metricsText(ctx.stack, `adapter-${COUNTRY}`),
    'dnc_adapter_check_duration_seconds',
  );
  const raw = await benchAdapterCheckRaw(ctx, phones, expected);
  return {
    grpc_round_trip_ms: latency,
    grpc_round_trip_pre_encoded_ms: raw,
    handler_mean_ms: round(((after.sum - before.sum) / (after.count - before.count)) * 1000),
  };
}

/**
 * The quota ledger alone: Reserve + Commit pairs (what every v1 request does) from 32 concurrent
 * callers, first all on ONE account (organization, country, month), then spread over 8 accounts.
 * Every Reserve and Commit locks its account row until its transaction is durable, so one account
 * serializes; the difference between the two figures is that lock.
 */
export async function benchQuotaLock(ctx) {
  const { quota: quotaAt, quotaAdmin: quotaAdminAt } = ctx.stack.addresses;
  const quota = createClient(quotav1.QuotaService, await transportAs(ctx, 'admission', 'quota', quotaAt));
  const admin = createClient(
    quotav1.QuotaAdminService,
    await transportAs(ctx, 'operator', 'quota', quotaAdminAt),
  );
  // Organization ids are lowercase UUIDs (quota's admin methods refuse any other form).
  const accounts = Array.from({ length: 8 }, () => randomUUID());
  for (const orgId of accounts)
    await admin.setLimit({ orgId, country: COUNTRY, limit: 1_000_000_000_000n }, { timeoutMs: 5_000 });
  const seconds = smoke ? 2 : 10;
  const run = async (orgsUsed) => {
    let pairs = 0;
    const until = now() + seconds * 1000;
    const latencies = [];
    const caller = async (c) => {
      const orgId = accounts[c % orgsUsed];
      while (now() < until) {
        const reservationId = randomUUID();
        const t = now();
        await quota.reserve(
          { reservationId, orgId, country: COUNTRY, amount: 1n, kind: quotav1.UsageKind.SYNC },
          { timeoutMs: 10_000 },
        );
        await quota.commit({ reservationId }, { timeoutMs: 10_000 });
        latencies.push(now() - t);
        pairs++;
      }
    };
    const t0 = now();
    await Promise.all(Array.from({ length: 32 }, (_, c) => caller(c)));
    return { pairs, pairs_per_s: round(pairs / ((now() - t0) / 1000), 0), latency_ms: summarize(latencies) };
  };
  const one = await run(1);
  const eight = await run(8);
  return { concurrency: 32, seconds, one_account: one, eight_accounts: eight };
}
