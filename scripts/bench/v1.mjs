// v1 phases: the 10,000-number request, the lone one-number request (the fixed cost), the same cost
// split into its internal calls, and single-number requests under load.
import { createHmac } from 'node:crypto';
import { createClient } from '@connectrpc/connect';
import { admissionv1, registryv1 } from '@dnc/proto';
import { transportAs } from './adapter.mjs';
import { expectSummary, histogram, metricsText, scrubRequest } from './bench-stack.mjs';
import { CONFIG, smoke } from './config.mjs';
import { autocannonRun, loadFigures } from './load.mjs';
import { now, round, summarize, timeRuns } from './stats.mjs';
import { body, COUNTRY, inputs } from './workload.mjs';

export async function benchV1Batch(ctx) {
  const { phones, expected } = inputs(CONFIG.v1_batch, CONFIG.registry_size, 1);
  const bodyText = body(phones);
  const gw0 = histogram(
    await metricsText(ctx.stack, 'gateway'),
    'dnc_http_request_duration_seconds',
    '/v1/scrub',
  );
  const ad0 = histogram(
    await metricsText(ctx.stack, `adapter-${COUNTRY}`),
    'dnc_adapter_check_duration_seconds',
  );
  let bytes = 0;
  const latency = await timeRuns(
    async (i) => {
      const res = await scrubRequest(ctx, '/v1/scrub', bodyText, `bench-v1-${ctx.run}-${i}`);
      const text = await res.text();
      if (res.status !== 200) throw new Error(`v1 10k: HTTP ${res.status} ${text.slice(0, 200)}`);
      bytes = text.length;
      if (i === 0) expectSummary('v1 10k', JSON.parse(text).summary, expected, phones.length);
    },
    CONFIG.v1_runs,
    CONFIG.v1_warmup,
  );
  const gw1 = histogram(
    await metricsText(ctx.stack, 'gateway'),
    'dnc_http_request_duration_seconds',
    '/v1/scrub',
  );
  const ad1 = histogram(
    await metricsText(ctx.stack, `adapter-${COUNTRY}`),
    'dnc_adapter_check_duration_seconds',
  );
  return {
    end_to_end_ms: latency,
    request_bytes: bodyText.length,
    response_bytes: bytes,
    gateway_server_mean_ms: round(((gw1.sum - gw0.sum) / (gw1.count - gw0.count)) * 1000),
    adapter_handler_mean_ms: round(((ad1.sum - ad0.sum) / (ad1.count - ad0.count)) * 1000),
  };
}

const loneBodies = () =>
  Array.from({ length: 100 }, (_, i) => body(inputs(1, CONFIG.registry_size, i + 100).phones));

async function loneRequest(ctx, bodies, i) {
  const res = await scrubRequest(ctx, '/v1/scrub', bodies[i % 100], `bench-v1one-${ctx.run}-${i}`);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`v1 single: HTTP ${res.status} ${text.slice(0, 200)}`);
}

/**
 * The first lone requests the stack serves (processes that have not served yet run unoptimized
 * code), reported apart: the first 20 measured, then `lone_warmup` more.
 */
export async function benchV1LoneWarmUp(ctx) {
  const bodies = loneBodies();
  const cold = await timeRuns((i) => loneRequest(ctx, bodies, i), 20, 0);
  for (let i = 0; i < CONFIG.lone_warmup; i++) await loneRequest(ctx, bodies, 20 + i);
  return cold;
}

/**
 * Lone one-number requests, one after another: the fixed cost of a v1 request (nothing to batch with).
 * `from` sets the first Idempotency-Key number (every measurement of it uses its own keys).
 */
export function benchV1Lone(ctx, from = 100_000) {
  const bodies = loneBodies();
  return timeRuns((i) => loneRequest(ctx, bodies, i + from), CONFIG.lone_runs, 0);
}

/**
 * Where the fixed cost of a v1 request goes: the gateway's three admission calls and a one-number
 * Check, each alone over gRPC, sequentially (the rest of a one-number request is the gateway's HTTP).
 */
export async function benchV1FixedSplit(ctx) {
  const admission = createClient(
    admissionv1.AdmissionService,
    await transportAs(ctx, 'gateway', 'admission', ctx.stack.addresses.admission),
  );
  const adapter = createClient(
    registryv1.RegistryAdapterService,
    await transportAs(ctx, 'gateway', `registry-adapter-${COUNTRY}`, ctx.stack.addresses.adapters[COUNTRY]),
  );
  const runs = smoke ? 20 : 100;
  const warmup = smoke ? 10 : 100;
  const samples = { authenticate: [], admit: [], check_one: [], complete: [] };
  for (let i = 0; i < warmup + runs; i++) {
    const phones = inputs(1, CONFIG.registry_size, i + 5_000).phones;
    let t = now();
    const authenticated = await admission.authenticate(
      { apiKey: ctx.apiKey, clientAddress: '127.0.0.1' },
      { timeoutMs: 5_000 },
    );
    const auth = now() - t;
    t = now();
    const admitted = await admission.admit(
      {
        orgId: ctx.orgId,
        keyId: ctx.keyId,
        country: COUNTRY,
        idempotencyKey: `bench-split-${ctx.run}-${i}`,
        fingerprint: `v1:${createHmac('sha256', 'bench')
          .update(JSON.stringify([COUNTRY, phones]))
          .digest('hex')}`,
        inputCount: 1,
        kind: admissionv1.RequestKind.SYNC,
        // As the gateway does: admission's assertion of the organization, from Authenticate.
        orgAssertion: authenticated.orgAssertion,
      },
      { timeoutMs: 5_000 },
    );
    const admit = now() - t;
    t = now();
    await adapter.check({ country: COUNTRY, phones }, { timeoutMs: 5_000 });
    const check = now() - t;
    t = now();
    await admission.complete({ admissionId: admitted.admissionId }, { timeoutMs: 5_000 });
    const complete = now() - t;
    if (i >= warmup) {
      samples.authenticate.push(auth);
      samples.admit.push(admit);
      samples.check_one.push(check);
      samples.complete.push(complete);
    }
  }
  return Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, summarize(v)]));
}

/** Mean requests per batched internal call of the gateway (dnc_gateway_batch_size), by call. */
async function batchSizes(ctx) {
  const text = await metricsText(ctx.stack, 'gateway');
  const out = {};
  for (const call of ['admit', 'check', 'complete']) {
    const h = histogram(text, 'dnc_gateway_batch_size', `call="${call}"`);
    out[call] = { calls: h.count, requests: h.sum };
  }
  return out;
}

/** Single-number requests under load: autocannon, a unique Idempotency-Key per request. */
export async function benchV1Sustained(ctx) {
  const bodies = Array.from({ length: 1000 }, (_, i) =>
    body(inputs(1, CONFIG.registry_size, i + 1000).phones),
  );
  const load = (seconds, tag) =>
    autocannonRun({
      url: `${ctx.stack.baseUrl}/v1/scrub`,
      connections: CONFIG.single_connections,
      seconds,
      bodies,
      baseHeaders: { authorization: `Bearer ${ctx.apiKey}` },
      headers: (n) => ({ 'idempotency-key': `bench-ac-${ctx.run}-${tag}-${n}` }),
    });
  const warm = await load(smoke ? 1 : 5, 'warmup');
  const before = await batchSizes(ctx);
  const r = await load(CONFIG.single_duration_s, 'run');
  const after = await batchSizes(ctx);
  const batch_mean = Object.fromEntries(
    Object.keys(after).map((k) => {
      const calls = after[k].calls - before[k].calls;
      return [k, calls > 0 ? round((after[k].requests - before[k].requests) / calls, 1) : null];
    }),
  );
  return { warmup_requests: warm.requests.total, ...loadFigures(r), batch_mean };
}
