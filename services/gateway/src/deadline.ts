export interface Deadline {
  /** Milliseconds left (at least 1, so a call fails by its own deadline), optionally capped. */
  remaining(cap?: number): number;
  expired(): boolean;
}

/**
 * One deadline from the gateway down: every internal call of a request gets what is left of the budget
 * that started at `startMs` (`budgetStart`).
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
 * When a request's budget starts: at its arrival, with the time its body took to arrive added. The spec's
 * budgets are the service's (v2: "authentication, validation, entitlement, quota reservation and
 * enqueueing"; v1: execution), not the client's upload: a v2 body uploaded slowly that left admission
 * less than its budget was refused on every retry that uploaded as slowly (its SubmitJob never had time
 * to store the job). The server's request timeout still bounds the upload itself.
 */
export function budgetStart(request: { receivedAt: number; uploadMs: number }): number {
  return request.receivedAt + request.uploadMs;
}
