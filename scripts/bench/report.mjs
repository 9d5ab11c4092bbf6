// The report on stdout: the table, the CPU seconds of every phase, and one summary line naming every
// figure of issue 18's table.
import { fmtRatio, int, mib, ms, ratio, s } from './format.mjs';
import { round } from './stats.mjs';
import { reportRows } from './table.mjs';
import { loneFloorMs } from './table-extra.mjs';

function table(rows) {
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
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(line)];
}

/** Event-loop wake-ups per unit of the processes that woke at all (net of idle). */
function wakeUps(p) {
  const woke = Object.entries(p.wakes_per_unit ?? {}).filter(([, v]) => v >= 0.01);
  return woke.length
    ? `; event-loop wake-ups per ${p.units.unit}: ${woke.map(([k, v]) => `${k} ${v}`).join(', ')}`
    : '';
}

function phaseLines(r) {
  const out = [
    'CPU seconds per phase (process: seconds); postgres/redis/nats are server-wide (other work on this machine counts):',
  ];
  for (const [label, p] of Object.entries(r.phases)) {
    const cpu = Object.entries(p.cpu_s)
      .filter(([, v]) => v >= 0.01)
      .map(([k, v]) => `${k} ${round(v, 2)}`)
      .join(', ');
    const perUnit = p.cpu_ms_per_unit
      ? ` | CPU ms per ${p.units.unit} (net of idle): ${Object.entries(p.cpu_ms_per_unit)
          .filter(([, v]) => v > 0)
          .map(([k, v]) => `${k} ${v}`)
          .join(
            ', ',
          )}; PG commits per ${p.units.unit} ${p.postgres_per_unit.commits}, internal calls ${p.rpcs_per_unit}${wakeUps(p)}`
      : '';
    out.push(
      `  ${label} (${p.wall_s} s wall; PG commits ${p.postgres.commits}, rows written ${p.postgres.rows_inserted + p.postgres.rows_updated + p.postgres.rows_deleted}): ${cpu}${perUnit}`,
    );
  }
  return out;
}

/** One line naming every figure of the issue's table, each with its ratio to its floor. */
export function summaryLine(r) {
  const f = r.floor;
  const lone = r.v1_one.p50;
  const loneFloor = loneFloorMs(r);
  const v1 = r.v1_10k.end_to_end_ms.p50;
  const check = r.adapter.grpc_round_trip_ms.p50;
  const u = r.v1_sustained;
  const hf = r.http_floor?.loaded;
  const job = r.v2_job && !r.v2_error ? r.v2_job : undefined;
  const v2 = job
    ? `v2 ${int(job.inputs)} ${s(job.total_ms)} (${fmtRatio(ratio(job.total_ms, f.v2_job_ms.total.p50))}${job.first ? `; first ${s(job.first.total_ms)}` : ''}) admission ${s(job.admission_ms)} (${fmtRatio(ratio(job.admission_ms, f.v2_job_ms.parse.p50))}${job.first ? `; first ${s(job.first.admission_ms)}` : ''})`
    : 'v2 FAILED';
  const rss = r.phases['v2 large job']?.rss_mib ?? {};
  const grow = (n) => (rss[n] ? rss[n].peak - rss[n].start : Number.NaN);
  return [
    `bench ${r.config.mode}: lone ${ms(lone)} (${fmtRatio(ratio(lone, loneFloor))} floor ${ms(loneFloor)}${r.v1_one_after_load ? `; after the load ${ms(r.v1_one_after_load.p50)}` : ''})`,
    `v1 10k p50 ${ms(v1)} (${fmtRatio(ratio(v1, f.v1_10k_ms.total.p50))})`,
    `single ${int(u.rps_mean)} req/s p99 ${ms(u.latency_ms.p99)} errors ${int(u.errors)} (${fmtRatio(ratio(hf?.rps_mean, u.rps_mean))} HTTP floor)`,
    `Check 10k ${ms(check)} (${fmtRatio(ratio(check, f.check_10k_ms.p50))})`,
    v2,
    `peak per large request gateway +${mib(grow('gateway'))} worker +${mib(grow('job-worker'))} MiB`,
    `${r.environment.cores} cores`,
  ].join(' | ');
}

export function printReport(r, outFile) {
  const e = r.environment;
  const out = [
    '',
    `dnc-scrub bench (${r.config.mode}) - ${e.cpu_model}, ${e.cores} cores, ${e.memory_gib} GiB, node ${e.node}, commit ${(e.git_commit ?? 'unknown').slice(0, 10)}${e.git_dirty ? ' (dirty)' : ''}`,
    `registry ${int(r.config.registry_size)} ${r.config.country} numbers; load average ${e.load_average_at_start.join(' ')} at start, ${(e.load_average_at_end ?? []).join(' ')} at end. Ratio = service / floor (throughput: floor / service).`,
    ...table(reportRows(r)),
    '',
    ...phaseLines(r),
    `results: ${outFile}`,
    summaryLine(r),
  ];
  process.stdout.write(`${out.join('\n')}\n`);
}
