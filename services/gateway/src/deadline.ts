export interface Deadline {
  /** Milliseconds left (at least 1, so a call fails by its own deadline), optionally capped. */
  remaining(cap?: number): number;
  expired(): boolean;
}

/**
 * One deadline from the gateway down: every internal call of a request gets what is left of the budget
 * that started at `startMs` (the request's arrival; for v2, `admissionBudgetStart`), and none past
 * `notAfterMs` (a stopping gateway's bound, `StopClock`).
 */
export function deadlineOf(
  startMs: number,
  budgetMs: number,
  notAfterMs = Number.POSITIVE_INFINITY,
): Deadline {
  const end = Math.min(startMs + budgetMs, notAfterMs);
  return {
    remaining(cap = Number.POSITIVE_INFINITY) {
      return Math.max(1, Math.min(cap, end - Date.now()));
    },
    expired() {
      return Date.now() >= end;
    },
  };
}

/**
 * The most of a v2 body's upload left out of its admission budget: a 500,000-number body (8 MB) then
 * arrives over a link of about 1.5 Mbit/s, a 25 MiB one over about 5 Mbit/s (the request timeout, 60 s,
 * bounds the upload itself). The service's calls for a v2 request end within about 50 s of its arrival
 * (45 s of upload, the 5 s budget, a confirmation or an abort gets at least 250 ms): inside the life an
 * organization assertion has left when it is handed out, before the body (at least 60 s: it is used
 * again after the body), and inside the SDK's attempt timeout (60 s). A request whose upload took longer
 * has less budget, or too little (`submitV2` then answers 503 without a call). A stopping gateway ends
 * them sooner (`StopClock`). It was 10 s: an 8 MB body over a link slower than about 5 Mbit/s was
 * answered 503 on every try (found 2026-12-05).
 */
export const UPLOAD_LEFT_OUT_MAX_MS = 45_000;

/**
 * When a v2 request's admission budget starts: at its arrival, with the time its body took to arrive (up
 * to UPLOAD_LEFT_OUT_MAX_MS) left out. The spec's admission budget covers "authentication, validation,
 * entitlement, quota reservation and enqueueing", not the client's upload: a body uploaded more slowly
 * than the budget left SubmitJob no time, and the scheduler refused to store the job on every retry that
 * uploaded as slowly (found 2026-12-05). v1 keeps its budget from the arrival: the spec has it answer
 * within 15 seconds, and clients size their timeouts on that.
 */
export function admissionBudgetStart(request: { receivedAt: number; uploadMs: number }): number {
  return request.receivedAt + Math.min(request.uploadMs, UPLOAD_LEFT_OUT_MAX_MS);
}

/**
 * When a stopping gateway's calls must have ended: its shutdown bound (DNC_SHUTDOWN_TIMEOUT_MS from the
 * signal, after which the process exits whatever is in flight) less the time to write an answer. A v2
 * body still arriving when the gateway was told to stop (it takes requests during preStop) can take longer
 * than that: its calls are cut to the bound, or not made (503, Retry-After: 1, so the retry reaches a
 * gateway that stays), never cut off halfway by the exit.
 */
export class StopClock {
  static readonly ANSWER_MARGIN_MS = 2_000;
  private at = Number.POSITIVE_INFINITY;

  /** The gateway was told to stop: the process exits `boundMs` from now. */
  begin(boundMs: number, now = Date.now()): void {
    this.at = Math.min(this.at, now + boundMs - StopClock.ANSWER_MARGIN_MS);
  }

  /** The last moment a call may end at (infinite until `begin`). */
  get notAfter(): number {
    return this.at;
  }
}
