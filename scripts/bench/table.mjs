// The report: one table on stdout, each service figure beside its floor and the ratio service / floor
// (> 1: the service spends that many times the floor's time; for throughput, floor / service).
import { round } from './stats.mjs';

const ms = (x) => (Number.isFinite(x) ? `${round(x, x < 10 ? 2 : 1)} ms` : '-');
const s = (x) => (Number.isFinite(x) ? `${round(x / 1000, 2)} s` : '-');
const ratio = (service, floor) =>
  Number.isFinite(service) && Number.isFinite(floor) && floor > 0 ? round(service / floor, 1) : null;
const fmtRatio = (r) => (r === null ? '-' : `${r}x`);
const int = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en') : '-');

/** Rows of the table and the ratios of the summary line, from bench-results.json. */
export function reportRows(r) {
  const f = r.floor;
  const rows = [];
  const add = (section, metric, service, floor, rat, target = '') =>
    rows.push({ section, metric, service, floor, ratio: rat, target });

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
    '',
    '',
  );
  const a = r.adapter;
  const checkRatio = ratio(a.grpc_round_trip_ms.p50, f.check_10k_ms.p50);
  add(
    'adapter',
    "Check 10,000 mixed, the gateway's client (Connect, one-pass encoder), p50",
    ms(a.grpc_round_trip_ms.p50),
    ms(f.check_10k_ms.p50),
    fmtRatio(checkRatio),
    '< 25 ms',
  );
  if (a.grpc_round_trip_pre_encoded_ms) {
    const pre = a.grpc_round_trip_pre_encoded_ms;
    add(
      'adapter',
      'Check 10,000 over gRPC, request pre-encoded, p50 / p99',
      `${ms(pre.p50)} / ${ms(pre.p99)}`,
      ms(f.check_10k_ms.p50),
      fmtRatio(ratio(pre.p50, f.check_10k_ms.p50)),
      '< 25 ms (the adapter alone)',
    );
  }
  add(
    'adapter',
    'Check 10,000 over gRPC, p99',
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
  if (q) {
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
      '',
      '',
      '',
    );
  }
  const v = r.v1_10k;
  const v1Ratio = ratio(v.end_to_end_ms.p50, f.v1_10k_ms.total.p50);
  add(
    'v1',
    '10,000-number request end to end, p50',
    ms(v.end_to_end_ms.p50),
    ms(f.v1_10k_ms.total.p50),
    fmtRatio(v1Ratio),
    '< 60 ms',
  );
  add(
    'v1',
    '10,000-number request end to end, p99',
    ms(v.end_to_end_ms.p99),
    ms(f.v1_10k_ms.total.p99),
    fmtRatio(ratio(v.end_to_end_ms.p99, f.v1_10k_ms.total.p99)),
  );
  // Stage split of the p50: the fixed cost of any request, the adapter's share, the rest (gateway).
  const fixed = r.v1_one.p50;
  const check = a.grpc_round_trip_ms.p50;
  const rest = v.end_to_end_ms.p50 - fixed - check;
  const fl = f.v1_10k_ms;
  const floorRest = fl.parse.p50 + fl.build.p50 + fl.serialize.p50;
  add('v1', '  stage: fixed cost (1-number request, p50)', ms(fixed), '0 (no service)', '', '');
  add(
    'v1',
    '  stage: adapter Check round trip',
    ms(check),
    ms(fl.validate_lookup.p50),
    fmtRatio(ratio(check, fl.validate_lookup.p50)),
    '',
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
  if (sp) {
    add(
      'v1',
      '    of which CheckRequest encode, one pass (in process)',
      ms(sp.check_request_encode.p50),
      '',
      '',
      'gateway side of the gRPC hop',
    );
    add(
      'v1',
      '    of which body schema (Ajv) + fingerprint HMAC (in process)',
      ms(sp.schema_validation.p50 - fl.parse.p50 + sp.fingerprint_hmac.p50),
      '',
      '',
      '',
    );
  }
  const cpu10k = r.phases['v1 10k']?.cpu_ms_per_unit;
  if (cpu10k) {
    const per = (k) => (cpu10k[k] ?? 0) * r.config.v1_batch;
    const names = ['gateway', 'admission', 'quota', `adapter-${r.config.country}`];
    add(
      'v1',
      '  CPU per 10k request: ' + names.join(' / '),
      names.map((k) => ms(per(k))).join(' / '),
      ms(f.v1_10k_ms.total.p50),
      fmtRatio(
        ratio(
          names.reduce((t, k) => t + per(k), 0),
          f.v1_10k_ms.total.p50,
        ),
      ),
      'CPU, not wall: steadier on a busy machine',
    );
  }
  const fx = r.v1_fixed_split;
  if (fx) {
    const rpc = fx.authenticate.p50 + fx.admit.p50 + fx.check_one.p50 + fx.complete.p50;
    add(
      'v1',
      '  fixed cost: Authenticate / Admit / Check(1) / Complete p50',
      `${ms(fx.authenticate.p50)} / ${ms(fx.admit.p50)} / ${ms(fx.check_one.p50)} / ${ms(fx.complete.p50)}`,
      '',
      '',
      `sum ${ms(rpc)}; gateway HTTP rest ${fixed > rpc ? ms(fixed - rpc) : 'within noise'}`,
    );
  }
  add('v1', '  gateway server time (mean, its histogram)', ms(v.gateway_server_mean_ms), '', '', '');

  const u = r.v1_sustained;
  const rpsRatio = ratio(f.v1_single.rps_one_core, u.rps_mean);
  add(
    'v1',
    `single-number, ${u.connections} conn x ${u.duration_s} s: req/s`,
    int(u.rps_mean),
    `${int(f.v1_single.rps_one_core)} (1 core)`,
    fmtRatio(rpsRatio),
    '>= 1,000 req/s',
  );
  add(
    'v1',
    'single-number latency p50 / p99',
    `${ms(u.latency_ms.p50)} / ${ms(u.latency_ms.p99)}`,
    `${f.v1_single.us_per_request} us`,
    fmtRatio(ratio(u.latency_ms.p99 * 1000, f.v1_single.us_per_request)),
    'p99 < 100 ms',
  );
  add('v1', 'single-number errors (non-2xx + socket + timeouts)', int(u.errors), '', '', '0');
  if (u.batch_mean) {
    const b = u.batch_mean;
    add(
      'v1',
      '  requests per internal call: Admit / Check / Complete',
      `${b.admit ?? '-'} / ${b.check ?? '-'} / ${b.complete ?? '-'}`,
      '',
      '',
      'batched in flight',
    );
  }

  let v2Ratio = null;
  if (r.v2_job && !r.v2_error) {
    const j = r.v2_job;
    const fj = f.v2_job_ms;
    v2Ratio = ratio(j.total_ms, fj.total.p50);
    add(
      'v2',
      `${int(j.inputs)}-number job, POST to result downloaded${j.path === 'HTTP' ? '' : ' (gRPC)'}`,
      s(j.total_ms),
      ms(fj.total.p50),
      fmtRatio(v2Ratio),
      '< 6 s',
    );
    add(
      'v2',
      '  admission (POST until 202)',
      s(j.admission_ms),
      ms(fj.parse.p50),
      fmtRatio(ratio(j.admission_ms, fj.parse.p50)),
      '< 1.5 s (floor: parse)',
    );
    if (j.admission_split_ms) {
      const a2 = j.admission_split_ms;
      add(
        'v2',
        '    parse+HMAC / Admit / SubmitJob / ConfirmJob',
        `${s(a2.parse_and_fingerprint)} / ${s(a2.admit)} / ${s(a2.submit_job)} / ${s(a2.confirm_job)}`,
        '',
        '',
        'SubmitJob: encode, store encrypted input',
      );
    }
    add('v2', '  queue wait (created -> started)', s(j.queue_wait_ms), '0 (no queue)', '', '');
    add(
      'v2',
      '  execution (started -> terminal)',
      s(j.execution_ms),
      ms(fj.validate_lookup.p50 + fj.build.p50 + fj.serialize.p50),
      fmtRatio(ratio(j.execution_ms, fj.validate_lookup.p50 + fj.build.p50 + fj.serialize.p50)),
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
      '',
      '',
      '',
    );
  } else {
    add(
      'v2',
      'FAILED (details in bench-results.json)',
      (r.v2_error ?? '-').slice(0, 60),
      '',
      '',
      '< 6 s, admission < 1.5 s',
    );
  }

  const summary = {
    check: checkRatio,
    v1: v1Ratio,
    v1_single: rpsRatio,
    v2: v2Ratio,
  };
  return { rows, summary };
}

export function printReport(r, outFile) {
  const { rows, summary } = reportRows(r);
  const e = r.environment;
  const out = [];
  out.push('');
  out.push(
    `dnc-scrub bench (${r.config.mode}) - ${e.cpu_model}, ${e.cores} cores, ${e.memory_gib} GiB, node ${e.node}, commit ${(e.git_commit ?? 'unknown').slice(0, 10)}${e.git_dirty ? ' (dirty)' : ''}`,
  );
  out.push(
    `registry ${int(r.config.registry_size)} ${r.config.country} numbers; load average ${e.load_average_at_start.join(' ')} at start, ${(e.load_average_at_end ?? []).join(' ')} at end. Ratio = service / floor (throughput: floor / service).`,
  );
  const headers = ['', 'metric', 'service', 'floor', 'ratio', 'target'];
  const cells = rows.map((x) => [
    x.section,
    x.metric,
    String(x.service),
    String(x.floor),
    String(x.ratio),
    x.target,
  ]);
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c) =>
    c
      .map((v, i) => v.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  out.push(line(headers));
  out.push(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const c of cells) out.push(line(c));
  out.push('');
  out.push(
    'CPU seconds per phase (process: seconds); postgres/redis/nats are server-wide (other work on this machine counts):',
  );
  for (const [label, p] of Object.entries(r.phases)) {
    const cpu = Object.entries(p.cpu_s)
      .filter(([, v]) => v >= 0.01)
      .map(([k, v]) => `${k} ${round(v, 2)}`)
      .join(', ');
    const perUnit = p.cpu_ms_per_unit
      ? ` | CPU ms per ${p.units.unit} (net of idle): ${Object.entries(p.cpu_ms_per_unit)
          .filter(([, v]) => v > 0)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}; PG commits per ${p.units.unit} ${p.postgres_per_unit.commits}`
      : '';
    out.push(
      `  ${label} (${p.wall_s} s wall; PG commits ${p.postgres.commits}, rows written ${p.postgres.rows_inserted + p.postgres.rows_updated + p.postgres.rows_deleted}): ${cpu}${perUnit}`,
    );
  }
  out.push(`results: ${outFile}`);
  out.push(
    `bench ${r.config.mode}: adapter Check 10k ${ms(r.adapter.grpc_round_trip_ms.p50)} (${fmtRatio(summary.check)} floor) | v1 10k p50 ${ms(r.v1_10k.end_to_end_ms.p50)} (${fmtRatio(summary.v1)}) | v1 single ${int(r.v1_sustained.rps_mean)} req/s p99 ${ms(r.v1_sustained.latency_ms.p99)} errors ${int(r.v1_sustained.errors)} (${fmtRatio(summary.v1_single)}) | ${r.v2_job && !r.v2_error ? `v2 ${int(r.v2_job.inputs)} ${s(r.v2_job.total_ms)} admission ${s(r.v2_job.admission_ms)} (${fmtRatio(summary.v2)})` : 'v2 FAILED'} | ${e.cores} cores`,
  );
  process.stdout.write(`${out.join('\n')}\n`);
}
