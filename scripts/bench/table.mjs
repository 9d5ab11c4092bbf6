// The rows of the report: each service figure beside its floor and the ratio service / floor
// (> 1: the service spends that many times the floor's time; for throughput, floor / service).
import { fmtRatio, int, ms, ratio, s } from './format.mjs';
import { floorRows, loneFloorMs, memoryRows, perRequest } from './table-extra.mjs';

function adapterRows(r, add) {
  const f = r.floor;
  const reg = r.registry;
  add(
    'adapter',
    `registry load ${int(reg.size)} numbers (until serving)`,
    `${reg.load_until_serving_s} s`,
    s(f.index_build_ms),
    fmtRatio(ratio(reg.load_until_serving_s * 1000, f.index_build_ms)),
    'loads',
  );
  add(
    'adapter',
    'adapter RSS after load (peak)',
    `${reg.adapter_rss_mib} MiB (${reg.adapter_peak_rss_mib})`,
    `${f.rss_mib} MiB`,
  );
  const a = r.adapter;
  add(
    'adapter',
    "Check 10,000 mixed, the gateway's client (Connect, one-pass encoder), p50",
    ms(a.grpc_round_trip_ms.p50),
    ms(f.check_10k_ms.p50),
    fmtRatio(ratio(a.grpc_round_trip_ms.p50, f.check_10k_ms.p50)),
    '<= 2x floor',
  );
  const pre = a.grpc_round_trip_pre_encoded_ms;
  add(
    'adapter',
    'Check 10,000 over gRPC, request pre-encoded, p50 / p99',
    `${ms(pre.p50)} / ${ms(pre.p99)}`,
    ms(f.check_10k_ms.p50),
    fmtRatio(ratio(pre.p50, f.check_10k_ms.p50)),
    '(the adapter alone)',
  );
  add(
    'adapter',
    'Check 10,000, p99',
    ms(a.grpc_round_trip_ms.p99),
    ms(f.check_10k_ms.p99),
    fmtRatio(ratio(a.grpc_round_trip_ms.p99, f.check_10k_ms.p99)),
  );
  add(
    'adapter',
    'Check handler in the adapter (mean)',
    ms(a.handler_mean_ms),
    ms(f.check_10k_ms.p50),
    fmtRatio(ratio(a.handler_mean_ms, f.check_10k_ms.p50)),
  );
  add(
    'adapter',
    'validator + index in process (numbers/s)',
    int(f.check_in_process_numbers_per_s),
    int(f.validator_index_numbers_per_s),
    fmtRatio(ratio(f.validator_index_numbers_per_s, f.check_in_process_numbers_per_s)),
    'adapter checkPhones vs bare loop',
  );
  const q = r.quota_lock;
  add(
    'quota',
    `Reserve+Commit pairs/s, ${q.concurrency} callers: one account / 8 accounts`,
    `${int(q.one_account.pairs_per_s)} / ${int(q.eight_accounts.pairs_per_s)}`,
    '',
    '',
    'one account = one row lock per (org, country, month)',
  );
  add(
    'quota',
    '  pair latency p50 / p99: one account | 8 accounts',
    `${ms(q.one_account.latency_ms.p50)} / ${ms(q.one_account.latency_ms.p99)} | ${ms(q.eight_accounts.latency_ms.p50)} / ${ms(q.eight_accounts.latency_ms.p99)}`,
  );
}

function v1BatchRows(r, add) {
  const f = r.floor;
  const v = r.v1_10k;
  const fl = f.v1_10k_ms;
  add(
    'v1',
    '10,000-number request end to end, p50',
    ms(v.end_to_end_ms.p50),
    ms(fl.total.p50),
    fmtRatio(ratio(v.end_to_end_ms.p50, fl.total.p50)),
    '<= 3x floor',
  );
  add(
    'v1',
    '10,000-number request end to end, p99',
    ms(v.end_to_end_ms.p99),
    ms(fl.total.p99),
    fmtRatio(ratio(v.end_to_end_ms.p99, fl.total.p99)),
  );
  // Stage split of the p50: the fixed cost of any request, the adapter's share, the rest (gateway).
  const fixed = r.v1_one.p50;
  const check = r.adapter.grpc_round_trip_ms.p50;
  const rest = v.end_to_end_ms.p50 - fixed - check;
  const floorRest = fl.parse.p50 + fl.build.p50 + fl.serialize.p50;
  add('v1', '  stage: fixed cost (lone 1-number request, p50)', ms(fixed), '');
  add(
    'v1',
    '  stage: adapter Check round trip',
    ms(check),
    ms(fl.validate_lookup.p50),
    fmtRatio(ratio(check, fl.validate_lookup.p50)),
  );
  add(
    'v1',
    '  stage: gateway per-number work (rest)',
    rest > 0 ? ms(rest) : `${ms(rest)} (within noise)`,
    ms(floorRest),
    fmtRatio(ratio(rest, floorRest)),
    'parse+schema+HMAC+encode+build+send',
  );
  const sp = f.v1_10k_service_pieces_ms;
  add(
    'v1',
    '    of which CheckRequest encode, one pass (in process)',
    ms(sp.check_request_encode.p50),
    '',
    '',
    'gateway side of the adapter hop',
  );
  add(
    'v1',
    '    of which body schema (Ajv) + fingerprint HMAC (in process)',
    ms(sp.schema_validation.p50 - fl.parse.p50 + sp.fingerprint_hmac.p50),
  );
  const cpu10k = r.phases['v1 10k']?.cpu_ms_per_unit;
  if (cpu10k) {
    const per = (k) => (cpu10k[k] ?? 0) * r.config.v1_batch;
    const names = ['gateway', 'admission', 'quota', `adapter-${r.config.country}`];
    const total = names.reduce((t, k) => t + per(k), 0);
    add(
      'v1',
      `  CPU per 10k request: ${names.join(' / ')}`,
      names.map((k) => ms(per(k))).join(' / '),
      ms(fl.total.p50),
      fmtRatio(ratio(total, fl.total.p50)),
      'CPU, not wall: steadier on a busy machine',
    );
  }
  add('v1', '  gateway server time (mean, its histogram)', ms(v.gateway_server_mean_ms));
}

function v1LoneRows(r, add) {
  const one = r.v1_one;
  const floor = loneFloorMs(r);
  add(
    'v1',
    `lone one-number request, p50 (warm: after ${int(r.config.lone_warmup)})`,
    ms(one.p50),
    ms(floor),
    fmtRatio(ratio(one.p50, floor)),
    '<= 6 ms (floor: HTTP round trip + 1 durable commit)',
  );
  add('v1', '  lone p99 | cold: first 20 after start, p50', `${ms(one.p99)} | ${ms(one.cold_first_20?.p50)}`);
  const after = r.v1_one_after_load;
  if (after) {
    add(
      'v1',
      '  lone p50 again after every v1 phase (the processes long warm) / p99',
      `${ms(after.p50)} / ${ms(after.p99)}`,
      ms(floor),
      fmtRatio(ratio(after.p50, floor)),
      'reported, not judged (the row above is)',
    );
    add(
      'v1',
      '  per lone request after the load: CPU ms gateway / admission / quota / adapter / postgres',
      ...perRequest(r, 'v1 one number, after the load'),
    );
  }
  const fx = r.v1_fixed_split;
  const rpc = fx.authenticate.p50 + fx.admit.p50 + fx.check_one.p50 + fx.complete.p50;
  add(
    'v1',
    '  internal calls alone: Authenticate / Admit / Check(1) / Complete p50',
    `${ms(fx.authenticate.p50)} / ${ms(fx.admit.p50)} / ${ms(fx.check_one.p50)} / ${ms(fx.complete.p50)}`,
    '',
    '',
    `sum without Authenticate ${ms(rpc - fx.authenticate.p50)}`,
  );
  add(
    'v1',
    '  per lone request: CPU ms gateway / admission / quota / adapter / postgres',
    ...perRequest(r, 'v1 one number, sequential'),
  );
}

function v1LoadRows(r, add) {
  const u = r.v1_sustained;
  const hf = r.http_floor?.loaded;
  add(
    'v1',
    `single-number, ${u.connections} conn x ${u.duration_s} s: req/s`,
    int(u.rps_mean),
    hf ? `${int(hf.rps_mean)} (HTTP floor)` : '-',
    fmtRatio(ratio(hf?.rps_mean, u.rps_mean)),
    '>= 1,000 req/s',
  );
  add(
    'v1',
    'single-number latency p50 / p99',
    `${ms(u.latency_ms.p50)} / ${ms(u.latency_ms.p99)}`,
    hf ? `${ms(hf.latency_ms.p50)} / ${ms(hf.latency_ms.p99)}` : '-',
    fmtRatio(ratio(u.latency_ms.p99, hf?.latency_ms.p99)),
    'p99 < 100 ms',
  );
  add('v1', 'single-number errors (non-2xx + socket + timeouts)', int(u.errors), '', '', '0');
  const b = u.batch_mean;
  add(
    'v1',
    '  requests per internal call: Admit / Check / Complete',
    `${b.admit ?? '-'} / ${b.check ?? '-'} / ${b.complete ?? '-'}`,
    '',
    '',
    'batched in flight',
  );
  add(
    'v1',
    '  per request under load: CPU ms gateway / admission / quota / adapter / postgres',
    ...perRequest(r, 'v1 single sustained'),
  );
}

/** The v2 floor, measured twice (run.mjs `v2FloorAgain`): both, and the one judged by. */
function v2FloorRow(r, add) {
  const twice = r.floor_v2_measured;
  if (!twice) return;
  add(
    'v2',
    '  its floor, measured at the start / right before the v2 phases',
    `${ms(twice.at_start.v2_job_ms.total.p50)} / ${ms(twice.before_v2.v2_job_ms.total.p50)}`,
    ms(r.floor.v2_job_ms.total.p50),
    '',
    'every v2 ratio: against the faster',
  );
}

function v2Rows(r, add) {
  if (!r.v2_job || r.v2_error) {
    add(
      'v2',
      'FAILED (details in bench-results.json)',
      (r.v2_error ?? '-').slice(0, 60),
      '',
      '',
      '<= 3x floor, admission <= 0.3 s',
    );
    return;
  }
  const f = r.floor;
  const j = r.v2_job;
  const fj = f.v2_job_ms;
  add(
    'v2',
    `${int(j.inputs)}-number job (E.164), POST to result downloaded${j.runs ? ` (median of ${j.runs} after the first)` : ''}`,
    s(j.total_ms),
    ms(fj.total.p50),
    fmtRatio(ratio(j.total_ms, fj.total.p50)),
    '<= 3x floor',
  );
  v2FloorRow(r, add);
  add(
    'v2',
    '  admission (POST until 202)',
    s(j.admission_ms),
    ms(fj.parse.p50),
    fmtRatio(ratio(j.admission_ms, fj.parse.p50)),
    '<= 0.3 s (floor: parse)',
  );
  if (j.first)
    add(
      'v2',
      '  the first job of this size after start: total / admission',
      `${s(j.first.total_ms)} / ${s(j.first.admission_ms)}`,
      '',
      fmtRatio(ratio(j.first.total_ms, fj.total.p50)),
      'reported, not judged (the rows above are)',
    );
  add('v2', '  queue wait (created -> started)', s(j.queue_wait_ms), '0 (no queue)');
  const exec = fj.validate_lookup.p50 + fj.build.p50 + fj.serialize.p50;
  add(
    'v2',
    '  execution (started -> terminal)',
    s(j.execution_ms),
    ms(exec),
    fmtRatio(ratio(j.execution_ms, exec)),
    '(floor: validate+lookup+build+serialize)',
  );
  add(
    'v2',
    '  202 -> succeeded seen by polling',
    s(j.until_succeeded_seen_ms),
    '',
    '',
    `poll every ${r.config.poll_interval_ms} ms`,
  );
  add('v2', '  download of the result', s(j.download_ms), '', '', `${int(j.result_bytes)} bytes`);
  const c = r.v2_concurrent;
  const slowest = Math.max(...c.jobs.map((x) => x.total_ms));
  add(
    'v2',
    `${c.jobs.length} concurrent ${int(r.config.small_job_size)}-number jobs, makespan`,
    s(c.makespan_ms),
    ms(f.v2_4_jobs_ms),
    fmtRatio(ratio(c.makespan_ms, f.v2_4_jobs_ms)),
    'floor: 4 in a row',
  );
  add(
    'v2',
    '  per job: admission max / execution max / slowest total',
    `${s(Math.max(...c.jobs.map((x) => x.admission_ms)))} / ${s(Math.max(...c.jobs.map((x) => x.execution_ms)))} / ${s(slowest)}`,
  );
}

/** Rows of the table, from bench-results.json. */
export function reportRows(r) {
  const rows = [];
  const add = (section, metric, service, floor = '', rat = '', target = '') =>
    rows.push({ section, metric, service, floor, ratio: rat, target });
  adapterRows(r, add);
  v1BatchRows(r, add);
  v1LoneRows(r, add);
  v1LoadRows(r, add);
  v2Rows(r, add);
  floorRows(r, add);
  memoryRows(r, add);
  return rows;
}
