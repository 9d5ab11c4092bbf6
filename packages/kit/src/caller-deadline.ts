/** The latest a caller's deadline is believed: a completion or a commit never waits an hour. */
const MAX_AHEAD_MS = 60 * 60 * 1000;

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
 * A moment further ahead than an hour is not believed (a caller's bug, never a reason to wait).
 */
export function commitBy(now: number, relativeMs: number | undefined, deadlineUnixMs = 0n): number {
  // Undefined: no relative deadline. Zero or less: one that ran out before the work began (a handler
  // started late), which leaves no time at all; never taken for none (found by a review, 2026-12-05).
  const moment = deadlineUnixMs > 0n ? Number(deadlineUnixMs) : undefined;
  let by = Number.POSITIVE_INFINITY;
  if (relativeMs !== undefined) by = now + Math.max(0, relativeMs);
  if (moment !== undefined) {
    const transit = relativeMs === undefined ? 0 : Math.max(0, now + relativeMs - moment);
    by = Math.min(by, moment - transit);
  }
  return Number.isFinite(by) ? Math.min(by, now + MAX_AHEAD_MS) : by;
}
