#!/usr/bin/env node
// The physical floor: the work of a scrub without the service, in ONE process. Parse the same JSON
// body, validate and normalize with the adapter's fast validator, look up in the adapter's index class,
// build and serialize the result with @dnc/kit's buildScrubResult. No network, no admission, no quota,
// no storage: what is left when everything that makes it a service is taken away.
//
//   node scripts/bench/floor.mjs [--size 10000000] [--runs 20] [--job 500000] [--only job] [--smoke]
//
// Prints one JSON object; `npm run bench` runs it as a child process and prints each service figure
// beside its floor.
import { createHmac } from 'node:crypto';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { ScrubRequest } from '@dnc/api-contract';
import { buildScrubResult, checkRequest } from '@dnc/kit';
import { registryv1 } from '@dnc/proto';
import { now, round, summarize } from './stats.mjs';
import { body, COUNTRY, inputs, registryLines } from './workload.mjs';

const ROOT = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));
/** The Ajv the gateway's fastify compiles its schemas with (resolved through fastify, not a copy of ours). */
function gatewayAjv() {
  const fromGateway = createRequire(path.join(ROOT, 'services/gateway/package.json'));
  const fromFastify = createRequire(fromGateway.resolve('fastify'));
  const fromCompiler = createRequire(fromFastify.resolve('@fastify/ajv-compiler'));
  const ajv = fromCompiler('ajv');
  return ajv.default ?? ajv;
}

const adapterDist = (p) => pathToFileURL(path.join(ROOT, 'services/registry-adapter/dist', p)).href;

/** The adapter's own pieces, from its build output. */
async function adapterParts() {
  const [{ createNumbering }, { RegistryIndex }, { KeyBuffer }, { checkPhones }, { LocalProvider }] =
    await Promise.all([
      import('@dnc/numbering'),
      import(adapterDist('index/registry-index.js')),
      import(adapterDist('key-set.js')),
      import(adapterDist('check.js')),
      import(adapterDist('providers/local-provider.js')),
    ]);
  return { createNumbering, RegistryIndex, KeyBuffer, checkPhones, LocalProvider };
}

// A validator result <= 0 is -Outcome (an OUTCOME_INVALID_* value).
const PROHIBITED = registryv1.Outcome.PROHIBITED;
const SAFE = registryv1.Outcome.SAFE;

function classify(phones, numbering, index) {
  const outcomes = new Uint8Array(phones.length);
  for (let i = 0; i < phones.length; i++) {
    const key = numbering.normalize(phones[i]);
    outcomes[i] = key > 0 ? (index.has(key) ? PROHIBITED : SAFE) : -key;
  }
  return outcomes;
}

/** One request's work, split by stage (milliseconds). */
function scrubOnce(bodyText, numbering, index) {
  const t0 = now();
  const { phones } = JSON.parse(bodyText);
  const t1 = now();
  const outcomes = classify(phones, numbering, index);
  const t2 = now();
  const result = buildScrubResult(phones, outcomes);
  const t3 = now();
  const out = JSON.stringify(result);
  const t4 = now();
  return {
    parse: t1 - t0,
    validateLookup: t2 - t1,
    build: t3 - t2,
    serialize: t4 - t3,
    total: t4 - t0,
    bytes: out.length,
    summary: result.summary,
  };
}

function stages(samples) {
  const pick = (k) => summarize(samples.map((s) => s[k]));
  return {
    total: pick('total'),
    parse: pick('parse'),
    validate_lookup: pick('validateLookup'),
    build: pick('build'),
    serialize: pick('serialize'),
  };
}

function expectSummary(label, summary, expected) {
  const ok =
    summary.prohibited_numbers === expected.prohibited &&
    summary.safe_numbers === expected.safe &&
    summary.invalid_numbers === expected.invalid;
  if (!ok)
    throw new Error(`floor ${label}: summary ${JSON.stringify(summary)} != ${JSON.stringify(expected)}`);
}

/**
 * Not the floor: the per-number work the service adds on the way, each piece timed alone on the same
 * 10,000-number body, to attribute the gateway's and the adapter's time beyond the floor. Fastify's
 * body schema (Ajv with the gateway's options), the request fingerprint (HMAC-SHA256), and protobuf-es
 * encoding and decoding of CheckRequest and CheckResponse on both sides of the gRPC hop.
 */
function servicePieces(bodyText, phones, numbering, index, warmup, runs) {
  const Ajv = gatewayAjv();
  const ajv = new Ajv({ removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false });
  const validate = ajv.compile(ScrubRequest);
  const outcomes = Array.from(classify(phones, numbering, index));
  const request = toBinary(
    registryv1.CheckRequestSchema,
    create(registryv1.CheckRequestSchema, { country: COUNTRY, phones }),
  );
  const response = toBinary(
    registryv1.CheckResponseSchema,
    create(registryv1.CheckResponseSchema, { outcomes, snapshotId: 'floor' }),
  );
  const pieces = {
    schema_validation: () => {
      if (!validate(JSON.parse(bodyText))) throw new Error('the bench body does not validate');
    },
    fingerprint_hmac: () =>
      createHmac('sha256', 'local-development-fingerprint-secret')
        .update(JSON.stringify([COUNTRY, phones]))
        .digest('hex'),
    // What the gateway and the worker send: the kit's one-pass encoder (checkRequest).
    check_request_encode: () => toBinary(registryv1.CheckRequestSchema, checkRequest(COUNTRY, phones)),
    check_request_decode: () => fromBinary(registryv1.CheckRequestSchema, request),
    check_response_encode: () =>
      toBinary(
        registryv1.CheckResponseSchema,
        create(registryv1.CheckResponseSchema, { outcomes, snapshotId: 'floor' }),
      ),
    check_response_decode: () => fromBinary(registryv1.CheckResponseSchema, response),
  };
  const out = {};
  for (const [name, fn] of Object.entries(pieces)) {
    const samples = [];
    for (let i = 0; i < warmup + runs; i++) {
      const t0 = now();
      fn();
      if (i >= warmup) samples.push(now() - t0);
    }
    out[name] = summarize(samples);
  }
  // schema_validation includes a JSON.parse; the parse alone is the floor's.
  return out;
}

/** Index build: normalize every registry line and sort (what a load costs the adapter without I/O). */
function indexFloor(parts, numbering, size) {
  const t = now();
  const buffer = new parts.KeyBuffer();
  for (const line of registryLines(size)) {
    const key = numbering.normalize(line);
    if (key <= 0) throw new Error('a synthetic registry line does not validate');
    buffer.push(key);
  }
  const index = parts.RegistryIndex.fromSorted('floor', new Date(), buffer.takeSortedDistinct());
  const index_build_ms = round(now() - t, 0);
  if (index.size !== size) throw new Error(`floor index has ${index.size} keys, expected ${size}`);
  return { index, index_build_ms };
}

/** v1: the 10,000-number request, by stage and by the service's own pieces. */
function v1Floor(numbering, index, { size, runs, warmup }) {
  const v1 = inputs(10_000, size, 1);
  const v1Body = body(v1.phones);
  const v1Samples = [];
  for (let i = 0; i < warmup + runs; i++) {
    const s = scrubOnce(v1Body, numbering, index);
    if (i === 0) expectSummary('v1 10k', s.summary, v1.expected);
    if (i >= warmup) v1Samples.push(s);
  }
  return {
    v1,
    figures: {
      v1_10k_ms: stages(v1Samples),
      v1_10k_result_bytes: v1Samples[0].bytes,
      v1_10k_service_pieces_ms: servicePieces(v1Body, v1.phones, numbering, index, warmup, runs),
    },
  };
}

/** v1: single-number requests back to back for `singleMs`. */
function singleFloor(numbering, index, { size, singleMs }) {
  const singles = Array.from({ length: 1000 }, (_, i) => body(inputs(1, size, i + 100).phones));
  const singleSamples = [];
  const until = now() + singleMs;
  let n = 0;
  for (let i = 0; i < 2000; i++) scrubOnce(singles[i % 1000], numbering, index);
  const startedSingle = now();
  while (now() < until) {
    const s = scrubOnce(singles[n % 1000], numbering, index);
    singleSamples.push(s.total);
    n++;
  }
  const singleSeconds = (now() - startedSingle) / 1000;
  return {
    requests: n,
    rps_one_core: round(n / singleSeconds, 0),
    us_per_request: round((singleSeconds * 1e6) / n, 2),
    ...Object.fromEntries(Object.entries(summarize(singleSamples)).map(([k, v]) => [`${k}_ms`, v])),
  };
}

/**
 * Adapter stage: validate + look up the 10,000 phones (no JSON, no result), bare loop and through
 * the adapter's own checkPhones + LocalProvider (its in-process code path).
 */
async function checkFloor(parts, numbering, index, v1, { runs, warmup }) {
  const phones = v1.phones;
  const bare = [];
  for (let i = 0; i < warmup + runs; i++) {
    const t0 = now();
    classify(phones, numbering, index);
    if (i >= warmup) bare.push(now() - t0);
  }
  const check_10k_ms = summarize(bare);
  // A replica that read the current snapshot pointer just now (SnapshotWatcher.confirmedWithin).
  const provider = new parts.LocalProvider({ current: index, confirmedWithin: () => true });
  const signal = new AbortController().signal;
  const real = [];
  for (let i = 0; i < warmup + runs; i++) {
    const t0 = now();
    const answer = await parts.checkPhones(phones, numbering, provider, signal);
    if (i >= warmup) real.push(now() - t0);
    if (i === 0 && answer.outcomes.filter((o) => o === PROHIBITED).length !== v1.expected.prohibited)
      throw new Error('checkPhones disagrees with the floor');
  }
  const check_10k_in_process_ms = summarize(real);
  return {
    check_10k_ms,
    check_10k_in_process_ms,
    validator_index_numbers_per_s: round(10_000 / (check_10k_ms.p50 / 1000), 0),
    check_in_process_numbers_per_s: round(10_000 / (check_10k_in_process_ms.p50 / 1000), 0),
  };
}

/** v2: the same work on the job's input (one process; the service splits it across processes). */
function jobFloor(numbering, index, { size, runs, jobSize, concurrentJobSize }) {
  const jobRuns = Math.max(3, Math.min(5, runs));
  const job = inputs(jobSize, size, 2, { e164: true });
  const jobBody = body(job.phones);
  const jobSamples = [];
  for (let i = 0; i < jobRuns + 1; i++) {
    const s = scrubOnce(jobBody, numbering, index);
    if (i === 0) expectSummary('v2 job', s.summary, job.expected);
    else jobSamples.push(s);
  }
  const small = inputs(concurrentJobSize, size, 3, { e164: true });
  const smallBody = body(small.phones);
  const smallSamples = [];
  for (let i = 0; i < jobRuns + 1; i++) {
    const s = scrubOnce(smallBody, numbering, index);
    if (i > 0) smallSamples.push(s);
  }
  const v2_small_job_ms = stages(smallSamples);
  return {
    v2_job_input_bytes: jobBody.length,
    v2_job_ms: stages(jobSamples),
    v2_job_result_bytes: jobSamples[0].bytes,
    v2_small_job_ms,
    // Four jobs in one process, one after another.
    v2_4_jobs_ms: round(4 * v2_small_job_ms.total.p50, 1),
  };
}

/** v1's floors and the adapter's; skipped with `only: 'job'`. */
async function v1Floors(parts, numbering, index, options) {
  const v1 = v1Floor(numbering, index, options);
  return {
    ...v1.figures,
    v1_single: singleFloor(numbering, index, options),
    ...(await checkFloor(parts, numbering, index, v1.v1, options)),
  };
}

export async function runFloor(options) {
  const parts = await adapterParts();
  const numbering = parts.createNumbering(COUNTRY, 'fast');
  const { index, index_build_ms } = indexFloor(parts, numbering, options.size);
  return {
    size: options.size,
    cores: availableParallelism(),
    index_build_ms,
    // `only: 'job'`: the v2 part alone, measured again right before the v2 phases (run.mjs).
    ...(options.only === 'job' ? {} : await v1Floors(parts, numbering, index, options)),
    ...jobFloor(numbering, index, options),
    rss_mib: Math.round(process.memoryUsage().rss / 2 ** 20),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({
    options: {
      size: { type: 'string' },
      runs: { type: 'string' },
      job: { type: 'string' },
      'small-job': { type: 'string' },
      only: { type: 'string' },
      smoke: { type: 'boolean', default: false },
    },
  });
  const smoke = values.smoke;
  const result = await runFloor({
    size: Number(values.size ?? (smoke ? 10_000 : 10_000_000)),
    // The floor is cheap: five times the service's runs, so its median is steady on a noisy machine.
    runs: 5 * Number(values.runs ?? (smoke ? 5 : 20)),
    warmup: smoke ? 5 : 20,
    jobSize: Number(values.job ?? (smoke ? 20_000 : 500_000)),
    concurrentJobSize: Number(values['small-job'] ?? (smoke ? 5_000 : 100_000)),
    singleMs: smoke ? 500 : 3_000,
    only: values.only,
  });
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}
