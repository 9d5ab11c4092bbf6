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
