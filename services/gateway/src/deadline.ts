export interface Deadline {
  /** Milliseconds left (at least 1, so a call fails by its own deadline), optionally capped. */
  remaining(cap?: number): number;
  expired(): boolean;
}

/**
 * One deadline from the gateway down: every internal call of a request gets what is left of the budget
 * that started when the request arrived.
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
