// The scale model of scripts/bench/README.md ("Scale model"), computed from full bench runs rather than
// copied by hand: the measured cost of each unit (a single-number request under load, a lone request, a
// number of a v1 10k request, a number of a 500,000-number job), median of the runs given, and what it
// takes, by the same arithmetic, to serve 5,000 single-number requests a second and 200 concurrent
// 500,000-number jobs an hour. The costs are measured; everything after them is extrapolation (linear
// per replica), and says so.
//
//   node scripts/bench/scale.mjs run1.json run2.json run3.json     (files written by `npm run bench --out`)
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { round, sig } from './stats.mjs';

const PROCESSES = ['gateway', 'admission', 'quota', 'adapter-co', 'job-scheduler', 'job-worker'];
const SERVERS = ['postgres (server-wide)', 'redis (server-wide)', 'nats (server-wide)'];
const SINGLE = 'v1 single sustained';
const LONE = 'v1 one number, sequential';
const V1_10K = 'v1 10k';
const V2 = 'v2 large job, repeated';

/** Target load of the model (issue 18 item 8) and the share of a core a replica is planned at. */
export const TARGETS = { singlePerSecond: 5_000, jobsPerHour: 200, jobSize: 500_000, coreShare: 0.6 };

const median = (xs) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** The per-unit costs of one run (a bench-results.json). */
export function unitCosts(run) {
  const phase = (name) => {
    const p = run.phases?.[name];
    if (!p) throw new Error(`the run has no phase "${name}": a full run of npm run bench is needed`);
    return p;
  };
  const perUnit = (p) =>
    Object.fromEntries([...PROCESSES, ...SERVERS].map((k) => [k, p.cpu_ms_per_unit[k] ?? 0]));
  const single = phase(SINGLE);
  const lone = phase(LONE);
  const v2 = phase(V2);
  const jobs = v2.units.count / run.v2_job.inputs;
  return {
    commit: run.environment.git_commit?.slice(0, 7),
    single: {
      cpuMs: perUnit(single),
      commits: single.postgres_per_unit.commits,
      walSyncs: single.postgres_per_unit.wal_syncs_server_wide,
      rows: single.postgres_per_unit.rows_written,
      walBytes: single.postgres.wal_bytes_server_wide / single.units.count,
      calls: single.rpcs_per_unit,
      batch: run.v1_sustained.batch_mean,
      rps: run.v1_sustained.rps_mean,
    },
    lone: { cpuMs: perUnit(lone), commits: lone.postgres_per_unit.commits, calls: lone.rpcs_per_unit },
    v1PerNumberUs: Object.fromEntries(Object.entries(perUnit(phase(V1_10K))).map(([k, v]) => [k, v * 1000])),
    v2: {
      perNumberUs: Object.fromEntries(Object.entries(perUnit(v2)).map(([k, v]) => [k, v * 1000])),
      commitsPerJob: v2.postgres.commits / jobs,
      walBytesPerJob: v2.postgres.wal_bytes_server_wide / jobs,
      inputBytes: run.v2_job.request_bytes,
      resultBytes: run.v2_job.result_bytes,
      checkCallsPerJob: (v2.rpcs_served?.['dnc.registry.v1.RegistryAdapterService/Check'] ?? 0) / jobs,
      wallMs: run.v2_job.total_ms,
      gatewayPeakMiB: v2.rss_mib?.gateway ? v2.rss_mib.gateway.peak - v2.rss_mib.gateway.start : Number.NaN,
    },
  };
}

/** Median of every leaf over the runs (each figure on its own). */
export function medianCosts(costs) {
  const walk = (values) => {
    const first = values[0];
    if (typeof first === 'number') return median(values);
    if (typeof first === 'string' || first === undefined) return values.join(', ');
    return Object.fromEntries(Object.keys(first).map((k) => [k, walk(values.map((v) => v[k]))]));
  };
  return walk(costs);
}

/** The two target loads, from the costs: cores per process, commits, WAL, calls, storage. */
export function extrapolate(c, t = TARGETS) {
  const rate = t.singlePerSecond;
  const coresSingle = Object.fromEntries(
    Object.entries(c.single.cpuMs).map(([k, v]) => [k, (rate * v) / 1000]),
  );
  const replicas = Object.fromEntries(
    PROCESSES.filter((k) => coresSingle[k] > 0.01).map((k) => [
      k,
      Math.max(1, Math.ceil(coresSingle[k] / t.coreShare)),
    ]),
  );
  const numbersPerHour = t.jobsPerHour * t.jobSize;
  const cpuSecondsPerJob = Object.fromEntries(
    Object.entries(c.v2.perNumberUs).map(([k, v]) => [k, (v * t.jobSize) / 1e6]),
  );
  const jobCpu = Object.values(cpuSecondsPerJob).reduce((a, b) => a + b, 0);
  return {
    single: {
      rate,
      cores: coresSingle,
      totalCores: Object.values(coresSingle).reduce((a, b) => a + b, 0),
      replicas,
      commitsPerSecond: rate * c.single.commits,
      walSyncsPerSecond: rate * c.single.walSyncs,
      rowsPerSecond: rate * c.single.rows,
      walMBPerSecond: (rate * c.single.walBytes) / 1e6,
      walTBPerDay: (rate * c.single.walBytes * 86_400) / 1e12,
      callsPerSecond: rate * c.single.calls,
      idempotencyRowsPerDay: rate * 86_400,
    },
    jobs: {
      numbersPerSecond: numbersPerHour / 3600,
      cpuSecondsPerJob,
      jobCpu,
      averageCores: (jobCpu * t.jobsPerHour) / 3600,
      burstCpuSeconds: jobCpu * t.jobsPerHour,
      commitsPerHour: c.v2.commitsPerJob * t.jobsPerHour,
      walGBPerHour: (c.v2.walBytesPerJob * t.jobsPerHour) / 1e9,
      blobGBPerHour: ((c.v2.inputBytes + c.v2.resultBytes) * t.jobsPerHour) / 1e9,
      resultsKeptGB: (c.v2.resultBytes * t.jobsPerHour * 24 * 7) / 1e9,
      checkCallsPerHour: c.v2.checkCallsPerJob * t.jobsPerHour,
    },
  };
}

const cell = (x) => (Number.isFinite(x) ? String(sig(x)) : '-');

/** The model as Markdown: the measured table, then the two extrapolations' figures. */
export function render(runs) {
  const c = medianCosts(runs.map(unitCosts));
  const e = extrapolate(c);
  const rows = [...PROCESSES, ...SERVERS].map(
    (k) =>
      `| ${k.replace(' (server-wide)', '')} | ${cell(c.single.cpuMs[k])} | ${cell(c.lone.cpuMs[k])} | ${cell(c.v1PerNumberUs[k])} | ${cell(c.v2.perNumberUs[k])} |`,
  );
  const cores = Object.entries(e.single.cores)
    .filter(([, v]) => v >= 0.005)
    .map(([k, v]) => `${k.replace(' (server-wide)', '')} ${round(v, 2)}`)
    .join(', ');
  const jobCpu = Object.entries(e.jobs.cpuSecondsPerJob)
    .filter(([, v]) => v >= 0.005)
    .map(([k, v]) => `${k.replace(' (server-wide)', '')} ${round(v, 2)}`)
    .join(', ');
  return [
    `Median of ${runs.length} full run(s) (${c.commit}).`,
    '',
    '| process | CPU ms per single-number request under load | CPU ms per lone request | CPU us per number, v1 10k | CPU us per number, v2 job |',
    '| --- | --- | --- | --- | --- |',
    ...rows,
    `| PostgreSQL writes | ${cell(c.single.commits)} commits, ${cell(c.single.walSyncs)} WAL flushes, ${cell(c.single.rows)} rows, ${cell(c.single.walBytes / 1000)} KB of WAL | ${cell(c.lone.commits)} commits | - | ${cell(c.v2.commitsPerJob)} commits and ${cell(c.v2.walBytesPerJob / 1e6)} MB of WAL per job |`,
    `| internal calls | ${cell(c.single.calls)} per request (batches: Admit ${cell(c.single.batch.admit)}, Check ${cell(c.single.batch.check)}, Complete ${cell(c.single.batch.complete)}) | ${cell(c.lone.calls)} | - | ${cell(c.v2.checkCallsPerJob)} Check units per job |`,
    '',
    `${e.single.rate.toLocaleString('en')} single-number requests per second (extrapolation): ${round(e.single.totalCores, 2)} cores (${cores}); replicas at ${TARGETS.coreShare * 100}% of a core: ${Object.entries(
      e.single.replicas,
    )
      .map(([k, v]) => `${k} ${v}`)
      .join(
        ', ',
      )}; ${Math.round(e.single.commitsPerSecond).toLocaleString('en')} commits/s (${Math.round(e.single.walSyncsPerSecond).toLocaleString('en')} WAL flushes/s), ${Math.round(e.single.rowsPerSecond).toLocaleString('en')} row writes/s, ${round(e.single.walMBPerSecond, 1)} MB/s of WAL (${round(e.single.walTBPerDay, 2)} TB a day), ${Math.round(e.single.callsPerSecond).toLocaleString('en')} internal calls/s, ${(e.single.idempotencyRowsPerDay / 1e6).toLocaleString('en')} million idempotency records a day.`,
    '',
    `${TARGETS.jobsPerHour} jobs of ${TARGETS.jobSize.toLocaleString('en')} numbers an hour (extrapolation): ${Math.round(e.jobs.numbersPerSecond).toLocaleString('en')} numbers/s on average; ${round(e.jobs.jobCpu, 2)} CPU-seconds per job (${jobCpu}), ${round(e.jobs.averageCores, 2)} cores on average, ${Math.round(e.jobs.burstCpuSeconds)} CPU-seconds for a burst of ${TARGETS.jobsPerHour}; ${Math.round(e.jobs.commitsPerHour).toLocaleString('en')} commits an hour, ${round(e.jobs.walGBPerHour, 2)} GB of WAL an hour, ${round(e.jobs.blobGBPerHour, 2)} GB of input and result JSON an hour (stored compressed and sealed), ${round(e.jobs.resultsKeptGB, 0)} GB of results (JSON size) over the 7-day retention; ${Math.round(e.jobs.checkCallsPerHour).toLocaleString('en')} adapter Check calls an hour.`,
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error('usage: node scripts/bench/scale.mjs bench-results.json [more runs ...]');
    process.exit(2);
  }
  console.log(render(files.map((f) => JSON.parse(readFileSync(f, 'utf8')))));
}
