import type { FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** Date.now() when the request arrived (onRequest), start of every budget. */
    receivedAt?: number;
  }
}

export interface Deadline {
  /** Milliseconds left (at least 1, so a call fails by its own deadline), optionally capped. */
  remaining(cap?: number): number;
  expired(): boolean;
}

/** One deadline from the gateway down: every internal call gets what is left of the budget. */
export function requestDeadline(request: FastifyRequest, budgetMs: number): Deadline {
  const end = (request.receivedAt ?? Date.now()) + budgetMs;
  return {
    remaining(cap = Number.POSITIVE_INFINITY) {
      return Math.max(1, Math.min(cap, end - Date.now()));
    },
    expired() {
      return Date.now() >= end;
    },
  };
}
