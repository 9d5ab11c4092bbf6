export interface Deadline {
  /** Milliseconds left (at least 1, so a call fails by its own deadline), optionally capped. */
  remaining(cap?: number): number;
  expired(): boolean;
}

/**
 * One deadline from the gateway down: every internal call of a request gets what is left of the budget
 * that started at `startMs` (the request's arrival; for v2, `admissionBudgetStart`).
 */
export function deadlineOf(startMs: number, budgetMs: number): Deadline {
  const end = startMs + budgetMs;
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
 * The most of a v2 body's upload left out of its admission budget. The service's calls for a v2 request then
 * end within about 15 s of its arrival (a confirmation or an abort gets at least 250 ms): inside a stopping
 * gateway's drain (20 s from SIGTERM; the gateway still takes requests during preStop) with a margin, inside
 * the life an organization assertion has left when it is handed out (at least 60 s: it is used again after
 * the body), and well within the SDK's attempt timeout (60 s). A request whose upload took longer has less
 * budget, or too little (`submitV2` then answers 503 without a call).
 */
export const UPLOAD_LEFT_OUT_MAX_MS = 10_000;

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
