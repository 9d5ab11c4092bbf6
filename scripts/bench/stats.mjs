// Small helpers shared by the bench and its floor.

export const now = () => Number(process.hrtime.bigint()) / 1e6;

/** Nearest-rank percentile of an ascending array. */
export function pct(sorted, p) {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export function summarize(samples) {
  const s = [...samples].sort((a, b) => a - b);
  return {
    n: s.length,
    p50: round(pct(s, 50)),
    p99: round(pct(s, 99)),
    min: round(s[0]),
    max: round(s.at(-1)),
  };
}

export function round(x, digits = 2) {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** Run `fn` `warmup` times unmeasured, then `runs` times; milliseconds per run. */
export async function timeRuns(fn, runs, warmup) {
  for (let i = 0; i < warmup; i++) await fn(i);
  const samples = [];
  for (let i = 0; i < runs; i++) {
    const t = now();
    await fn(warmup + i);
    samples.push(now() - t);
  }
  return summarize(samples);
}

/** Three significant digits (per-unit costs span from microseconds to tens of milliseconds). */
export function sig(x) {
  return Number.isFinite(x) && x !== 0 ? Number(x.toPrecision(3)) : x;
}

const V2_JOB_FLOOR = ['v2_job_ms', 'v2_job_result_bytes'];
const V2_SMALL_JOBS_FLOOR = ['v2_small_job_ms', 'v2_4_jobs_ms'];
const fields = (f, keys) => Object.fromEntries(keys.map((k) => [k, f[k]]));

/** The v2 figures of a floor (floor.mjs's output). */
export function v2FloorOf(floor) {
  return fields(floor, [...V2_JOB_FLOOR, ...V2_SMALL_JOBS_FLOOR]);
}

/**
 * The v2 floor to judge by, of two measured (at the bench's start and right before its v2 phases): for
 * each figure the faster of the two, so that a VM slowing down between them never flatters a ratio.
 * The 500,000-number job's stages come from one measurement together, as do the small jobs'.
 */
export function fasterV2Floor(start, again) {
  const job = again.v2_job_ms.total.p50 < start.v2_job_ms.total.p50 ? again : start;
  const small = again.v2_4_jobs_ms < start.v2_4_jobs_ms ? again : start;
  return { ...fields(job, V2_JOB_FLOOR), ...fields(small, V2_SMALL_JOBS_FLOOR) };
}
