import { Histogram, type Registry } from 'prom-client';

/** The latest a caller's deadline is believed: a completion or a commit never waits an hour. */
const MAX_AHEAD_MS = 60 * 60 * 1000;

/** The top bucket: later is counted here. */
const LAG_MAX_SECONDS = 5;
/** Seconds, both signs: a receiver whose clock is behind its caller's sees the call arrive "early". */
const LAG_BUCKETS = [
  -1, -0.5, -0.25, -0.1, -0.05, -0.025, -0.005, 0, 0.005, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1, 5,
];

let arrivalLag: Histogram<'call'> | undefined;

/**
 * `dnc_call_arrival_lag_seconds` in the process's registry (`createMetricsRegistry` registers it): for each
 * call that named its deadline both ways, arrival + relative - moment, that is the time on the way plus how
 * far this process's clock is ahead of the caller's. On a healthy network it is a millisecond or two; many
 * calls far from zero are clocks apart or an overloaded receiver (alert `DncClockSkew`), which moves every
 * commit deadline of this service: ahead refuses early, behind commits late.
 */
export function registerArrivalLag(registry: Registry): void {
  arrivalLag = new Histogram({
    name: 'dnc_call_arrival_lag_seconds',
    help: "Calls' arrival + relative deadline - named deadline: transit plus this clock's lead on the caller's.",
    labelNames: ['call'],
    buckets: LAG_BUCKETS,
    registers: [registry],
  });
}

/**
 * The last moment (epoch ms, this process's clock) at which a call's effect may still commit with its
 * answer reaching the caller before it stops waiting; none known: +Infinity.
 *
 * A deadline travels as a relative time (`relativeMs`: the call's `grpc-timeout`, a request's
 * `timeout_ms`; undefined: none), which counts from the call's arrival, so time spent on the way would
 * stretch it; and as the moment itself (`deadlineUnixMs`, by the caller's clock, sent together with the
 * relative one), which does not stretch. The time the call took to arrive (arrival + relative - moment) is kept back as well:
 * an answer on the same link takes as long on its way back (found 2026-12-05: a completion held 700 ms
 * on its way was committed after its caller had answered 503, and one committed in time whose answer was
 * held as long was too). Clocks of a cluster are NTP-close; one ahead of the caller's only refuses earlier.
 * A moment further ahead than an hour is not believed (a caller's bug, never a reason to wait). `call`
 * names the call in `dnc_call_arrival_lag_seconds`.
 */
export function commitBy(
  now: number,
  relativeMs: number | undefined,
  deadlineUnixMs = 0n,
  call = 'unnamed',
): number {
  // Undefined: no relative deadline. Zero or less: one that ran out before the work began (a handler
  // started late), which leaves no time at all; never taken for none (found by a review, 2026-12-05).
  const moment = deadlineUnixMs > 0n ? Number(deadlineUnixMs) : undefined;
  let by = Number.POSITIVE_INFINITY;
  if (relativeMs !== undefined) by = now + Math.max(0, relativeMs);
  if (moment !== undefined) {
    const lag = relativeMs === undefined ? 0 : now + relativeMs - moment;
    // Clamped to the top bucket: prom-client files a value above every bound under the bound -1, which
    // is one of ours (a call 7 s late was counted as 1 s early; found by a review, 2026-12-05).
    if (relativeMs !== undefined) arrivalLag?.observe({ call }, Math.min(lag / 1000, LAG_MAX_SECONDS));
    const transit = Math.max(0, lag);
    by = Math.min(by, moment - transit);
  }
  return Number.isFinite(by) ? Math.min(by, now + MAX_AHEAD_MS) : by;
}
