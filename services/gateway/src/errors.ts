import { ERROR_CODES, type ErrorCode, isErrorCode } from '@dnc/api-contract';
import { Code, ConnectError, readPublicReason } from '@dnc/kit';
import type { FastifyReply } from 'fastify';

/** A public error decided inside the gateway (validation, limits). */
export class PublicHttpError extends Error {
  constructor(
    readonly code: ErrorCode,
    message?: string,
    readonly retryAfterSeconds = 0,
  ) {
    super(message ?? code);
  }
}

/** The rate-limit headers an authenticated request's answer carries (auth.ts), both spellings. */
export const RATE_LIMIT_HEADERS = [
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
] as const;

export interface MappedError {
  status: number;
  body: { error: ErrorCode; message?: string };
  retryAfterSeconds: number;
}

/**
 * THE mapping from a public reason to HTTP: the status comes from the contract's table, and
 * Retry-After only where the contract allows it. Nothing else in the code base knows HTTP statuses.
 */
export function toHttp(code: ErrorCode, message?: string, retryAfterSeconds = 0): MappedError {
  const info = ERROR_CODES[code];
  let retryAfter = info.retryAfter === 'absent' ? 0 : Math.max(0, Math.ceil(retryAfterSeconds));
  if (info.retryAfter === 'required' && retryAfter < 1) retryAfter = 1;
  const body: MappedError['body'] = { error: code };
  if (message) body.message = message;
  return { status: info.status, body, retryAfterSeconds: retryAfter };
}

/**
 * An error from an internal service. Its public reason (ErrorInfo detail) is used when it is one of
 * the contract's codes; otherwise the failure is the platform's (or the country's, for an adapter).
 */
export function fromRpcError(
  error: unknown,
  whenNoReason: ErrorCode = 'platform_failure',
  options: { unexpectedIsInternal?: boolean } = {},
): MappedError {
  const reason = readPublicReason(error);
  if (reason && isErrorCode(reason.reason)) {
    return toHttp(reason.reason, reason.message || undefined, reason.retryAfterSeconds);
  }
  const ce = ConnectError.from(error);
  if (options.unexpectedIsInternal === false) return toHttp(whenNoReason, undefined, 1);
  switch (ce.code) {
    case Code.InvalidArgument:
      return toHttp('validation_error');
    // A bug or broken state behind the boundary: an unexpected failure, not an outage.
    case Code.Internal:
    case Code.Unknown:
    case Code.DataLoss:
      return toHttp('internal_error');
    default:
      // Unreachable, overloaded or too slow: the documented outage code, retryable.
      return toHttp(whenNoReason, undefined, 1);
  }
}

export function sendMapped(reply: FastifyReply, mapped: MappedError): FastifyReply {
  // Spec, Authentication 3: a 401 carries no rate-limit headers, also when the key was accepted when the
  // request arrived and found revoked by the time it was admitted.
  if (mapped.status === 401) for (const name of RATE_LIMIT_HEADERS) reply.removeHeader(name);
  if (mapped.retryAfterSeconds > 0) reply.header('retry-after', String(mapped.retryAfterSeconds));
  return reply.code(mapped.status).type('application/json; charset=utf-8').send(mapped.body);
}
